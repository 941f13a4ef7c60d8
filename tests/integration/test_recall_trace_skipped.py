"""The recall trace explains a skipped candidate as fully as an included one: score, relevance, components."""

from __future__ import annotations

from tests.conftest import Api


async def test_a_skipped_candidate_carries_its_relevance_and_score_components(api: Api) -> None:
    tea = await api.remember(user_id="u", content="I prefer green tea in the afternoon", type="preference")
    sister = await api.remember(user_id="u", content="My sister lives in Lisbon")
    result = await api.recall(user_id="u", query="what tea do I like?")

    [included] = result["memories"]
    assert included["memory"]["id"] == tea["memory"]["id"]
    [skipped] = result["trace"]["skipped"]
    assert skipped["id"] == sister["memory"]["id"]
    assert skipped["reason"] == "below_floor"
    assert skipped["relevance"] < result["trace"]["min_relevance"] <= included["relevance"]
    assert set(skipped["components"]) == set(included["components"])
    assert skipped["components"]["semantic"] < included["components"]["semantic"]


async def test_a_candidate_skipped_for_budget_keeps_components_that_explain_its_score(api: Api) -> None:
    await api.remember(user_id="u", content="The deploy target is Kubernetes on the staging cluster")
    await api.remember(user_id="u", content="The deploy window is Tuesday night for the staging cluster")
    wide = await api.recall(user_id="u", query="deploy staging cluster", token_budget=1024)
    assert len(wide["memories"]) == 2
    narrow = await api.recall(  # room for the day's header and the first line, not the second
        user_id="u", query="deploy staging cluster", token_budget=wide["tokens_used"] - 1
    )
    [kept] = narrow["memories"]
    [dropped] = narrow["trace"]["skipped"]
    assert dropped["reason"] == "budget"
    assert dropped["score"] <= kept["score"]
    assert dropped["relevance"] >= narrow["trace"]["min_relevance"]
    assert dropped["components"]["keyword"] > 0
