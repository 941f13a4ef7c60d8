"""One similarity for near-duplicates (issue 20, item 6; app.memory.similarity), with the hash and the
local embedder: forget-by-query forgets exactly what recall ranks first (through REST and through the
offline chat agent), never another user's or tenant's memory; the offline dreamer proposes merging two
paraphrases of one preference and not two different preferences; the trace shows each candidate's
value compared with the floor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client

STAGING = "The staging server is staging.internal:8443 and deploys run from the main branch"
OTHERS = [
    ("The production database is PostgreSQL 16 on a managed host", "fact"),
    ("I prefer dark mode in my code editor", "preference"),
    ("I like tea more than coffee", "preference"),
    ("My sister Ana lives in Porto", "fact"),
    ("I won a chess tournament in 2023", "episodic"),
]
NOTE = "the staging server note"
WINDOW = "I prefer window seats on long flights"
WINDOW_AGAIN = "On long flights I prefer a window seat"
TEA = "I prefer tea to coffee in the morning"


@pytest.fixture(scope="session")
async def local_client(settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    """The app with the local model (torch: no ONNX export in the test run)."""
    local = settings.model_copy(update={"embedder": "local", "local_runtime": "torch"})
    async with running_client(local) as client:
        yield client


@pytest.fixture(params=["hash", "local"])
async def eapi(
    request: pytest.FixtureRequest,
    client: AsyncTestClient[Any],
    local_client: AsyncTestClient[Any],
    new_tenant: NewTenant,
) -> Api:
    """A new tenant on the app with each embedder."""
    app_client = client if request.param == "hash" else local_client
    tenant_id, key = await new_tenant()
    return Api(app_client, key, tenant_id)


async def _seed(api: Api, user: str = "u") -> str:
    staging = await api.remember(user_id=user, content=STAGING, type="fact")
    for content, mtype in OTHERS:
        await api.remember(user_id=user, content=content, type=mtype)
    memory_id: str = staging["memory"]["id"]
    return memory_id


async def _first(api: Api, query: str) -> str:
    """The memory recall ranks first for `query`."""
    recalled = await api.recall(user_id="u", query=query)
    best = max(recalled["memories"], key=lambda m: m["score"])
    memory_id: str = best["memory"]["id"]
    return memory_id


async def _status(api: Api, memory_id: str) -> str:
    status: str = (await api.memory(memory_id))["status"]
    return status


async def test_forget_the_staging_server_note_forgets_what_recall_ranks_first(eapi: Api) -> None:
    staging = await _seed(eapi)
    other_user = await _seed(eapi, "v")
    assert await _first(eapi, NOTE) == staging
    response = await eapi.post("/v1/forget", {"user_id": "u", "query": NOTE})
    assert response.status_code == 200, response.text
    assert response.json()["forgotten"] == [staging]
    assert await _status(eapi, staging) == "forgotten"
    assert await _status(eapi, other_user) == "active"  # another user's note is never theirs to forget


async def test_the_chat_agent_forgets_the_staging_server_note_recall_returns(eapi: Api) -> None:
    staging = await _seed(eapi)
    assert await _first(eapi, NOTE) == staging
    response = await eapi.post("/v1/chat", {"user_id": "u", "message": "Forget the staging server note"})
    assert response.status_code == 200, response.text
    calls = response.json()["tool_calls"]
    assert [c["name"] for c in calls] == ["forget"]
    assert calls[0]["result"]["forgotten"] == [staging]
    live = (await eapi.get("/v1/memories", user_id="u", status="active", limit=50)).json()["items"]
    assert sorted(m["content"] for m in live) == sorted(c for c, _ in OTHERS)


async def test_forget_by_query_never_reaches_another_tenant_or_an_unrelated_memory(
    eapi: Api, new_tenant: NewTenant
) -> None:
    tenant_id, key = await new_tenant()
    other_api = Api(eapi.client, key, tenant_id)  # another tenant on the same app (embedder)
    staging = await _seed(eapi)
    theirs = await other_api.post("/v1/forget", {"user_id": "u", "query": NOTE})
    assert theirs.status_code == 200, theirs.text
    assert theirs.json()["forgotten"] == []
    unrelated = await eapi.post("/v1/forget", {"user_id": "u", "query": "my sailing course next summer"})
    assert unrelated.json()["forgotten"] == []
    assert await _status(eapi, staging) == "active"


async def test_a_description_that_names_the_only_memory_forgets_it(eapi: Api) -> None:
    # One memory: BM25's idf is near zero and "my fresco hobby" is far from the sentence's meaning, yet
    # the description names it (the predecessors' fuzz case B-fresco); a word of it is what counts.
    fresco = await eapi.remember(user_id="solo", content="I paint frescoes on weekends.", type="fact")
    unrelated = await eapi.post("/v1/forget", {"user_id": "solo", "query": "my sailing course next summer"})
    assert unrelated.json()["forgotten"] == []
    response = await eapi.post("/v1/forget", {"user_id": "solo", "query": "my fresco hobby"})
    assert response.json()["forgotten"] == [fresco["memory"]["id"]]
    # Through the offline chat agent, the same rule.
    glass = await eapi.remember(
        user_id="solo2", content="I go glassblowing at a studio downtown.", type="fact"
    )
    reply = await eapi.post(
        "/v1/chat", {"user_id": "solo2", "message": "Please forget my glassblowing hobby"}
    )
    assert reply.status_code == 200, reply.text
    assert await _status(eapi, glass["memory"]["id"]) == "forgotten"


async def _dream_merges(api: Api) -> list[set[str]]:
    response = await api.post("/v1/dream", {"user_id": "u"})
    assert response.status_code == 200, response.text
    return [set(p["target_ids"]) for p in response.json()["proposals"] if p["kind"] == "merge"]


async def test_two_paraphrases_of_one_preference_are_proposed_for_a_merge(eapi: Api) -> None:
    # In different slots, as an extractor may put them: the write path keeps both.
    a = await eapi.remember(user_id="u", content=WINDOW, type="preference", subject="flights")
    b = await eapi.remember(user_id="u", content=WINDOW_AGAIN, type="preference", subject="seats")
    assert (a["action"], b["action"]) == ("created", "created")
    await eapi.remember(user_id="u", content="My sister Ana lives in Porto", type="fact")
    assert await _dream_merges(eapi) == [{a["memory"]["id"], b["memory"]["id"]}]


async def test_two_different_preferences_are_not_proposed_for_a_merge(eapi: Api) -> None:
    await eapi.remember(user_id="u", content=WINDOW, type="preference", subject="flights")
    await eapi.remember(user_id="u", content=TEA, type="preference", subject="drinks")
    assert await _dream_merges(eapi) == []


async def test_a_duplicate_embedded_by_another_model_is_still_found_by_its_words(
    api: Api, owner_engine: AsyncEngine
) -> None:
    a = await api.remember(user_id="u", content=WINDOW, type="preference", subject="flights")
    b = await api.remember(
        user_id="u", content="On long flights I prefer window seats", type="preference", subject="seats"
    )
    async with owner_engine.begin() as conn:  # as if written before a model switch, not yet re-embedded
        await conn.execute(
            text("UPDATE memories SET embed_model = 'retired-model' WHERE id = :id"),
            {"id": b["memory"]["id"]},
        )
    assert await _dream_merges(api) == [{a["memory"]["id"], b["memory"]["id"]}]


async def test_the_trace_shows_the_value_compared_with_the_floor(api: Api) -> None:
    await _seed(api)
    recalled = await api.recall(user_id="u", query=NOTE, explain=True)
    floor = recalled["trace"]["min_relevance"]
    included = {i["id"]: i for i in recalled["trace"]["included"]}
    for m in recalled["memories"]:
        parts = m["components"]
        saturated = parts["bm25"] / (parts["bm25"] + 2.0)  # ENGRAM_KEYWORD_SATURATION
        assert m["relevance"] == pytest.approx(max(parts["cosine"], saturated), abs=1e-6)
        assert 0.0 <= parts["coverage"] <= 1.0
        assert included[m["memory"]["id"]]["relevance"] == m["relevance"]
    for skipped in recalled["trace"]["skipped"]:
        if skipped["reason"] == "below_floor":
            assert skipped["relevance"] < floor
