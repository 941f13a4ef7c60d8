"""The offline model through HTTP, graded on the store (via the API), not on the prose."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api


async def chat(api: Api, message: str, session: str, **extra: Any) -> dict[str, Any]:
    response = await api.post(
        "/v1/chat", {"user_id": "u", "message": message, "session_id": session, **extra}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    assert result["mode"] == "offline"
    return result


async def active(api: Api, **filters: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await api.get("/v1/memories", user_id="u", **filters)).json()["items"]
    return [m for m in items if m["status"] in ("active", "pinned")]


async def test_preference_is_remembered_recalled_corrected_and_forgotten(api: Api) -> None:
    first = await chat(api, "I prefer dark mode", "s1")
    assert [c["name"] for c in first["tool_calls"]] == ["remember"]
    stored = await active(api)
    assert len(stored) == 1
    assert "dark mode" in stored[0]["content"]
    assert stored[0]["source"] == "agent"
    assert stored[0]["source_model"] == "engram-offline-1"
    assert stored[0]["session_id"] == "s1"

    asked = await chat(api, "What theme do I like?", "s2")
    assert "recall" in [c["name"] for c in asked["tool_calls"]]
    assert "dark mode" in asked["answer"]
    assert stored[0]["id"] in asked["memories_used"]

    await chat(api, "Actually I switched to light mode", "s3")
    theme = await active(api)
    assert len(theme) == 1
    assert "light mode" in theme[0]["content"]
    old = (await api.get(f"/v1/memories/{stored[0]['id']}")).json()
    assert old["status"] == "superseded"
    assert old["superseded_by"] == theme[0]["id"]

    forgot = await chat(api, "Forget my theme preference", "s4")
    assert [c["name"] for c in forgot["tool_calls"]] == ["forget"]
    assert await active(api) == []


async def test_migration_makes_the_new_framework_current(api: Api) -> None:
    await chat(api, "We use Flask for the API", "s1")
    await chat(api, "Migrate the API from Flask to FastAPI", "s2")
    current = await active(api)
    assert any("FastAPI" in m["content"] for m in current)
    assert not any("Flask" in m["content"] and "FastAPI" not in m["content"] for m in current)
    recall = await api.recall(user_id="u", query="which framework does the API use?")
    assert "FastAPI" in recall["context"]


async def test_chat_reports_usage_and_stores_redacted_messages(api: Api) -> None:
    secret = "sk-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
    result = await chat(api, f"Remember that my staging API key is {secret}", "s1")
    assert result["usage"]["total_tokens"] > 0
    assert result["usage"]["by_model"]["engram-offline-1"]["calls"] >= 1
    assert secret not in result["answer"]
    usage = (await api.get("/v1/usage", user_id="u")).json()
    assert (
        usage["by_model"]["engram-offline-1"]["total_tokens"]
        == result["usage"]["by_model"]["engram-offline-1"]["total_tokens"]
    )
    assert usage["by_kind"]["chat"]["calls"] == result["usage"]["by_model"]["engram-offline-1"]["calls"]
    for memory in await active(api):
        assert secret not in memory["content"]


async def test_extract_offline_turns_messages_into_actions(api: Api) -> None:
    response = await api.post(
        "/v1/memories/extract",
        {
            "user_id": "u",
            "messages": [
                {"role": "user", "content": "I am vegan and my dinner budget is 30 dollars"},
                {"role": "assistant", "content": "Noted!"},
                {"role": "user", "content": "I live in Lisbon"},
            ],
        },
    )
    assert response.status_code == 200, response.text
    actions = response.json()["actions"]
    contents = " ".join(a["memory"]["content"] for a in actions)
    assert "vegan" in contents
    assert "Lisbon" in contents
    assert all(a["memory"]["source"] == "extract" for a in actions)
    assert all(a["memory"]["source_message_id"] for a in actions)


async def test_chat_and_extract_are_tenant_scoped(api: Api, other_api: Api) -> None:
    # A text no other test sends: a query embedding cached by an earlier test records no embed call.
    await chat(api, "I prefer oolong tea over coffee", "s1")
    other = await other_api.post("/v1/chat", {"user_id": "u", "message": "What do I prefer to drink?"})
    assert other.status_code == 200
    assert "tea" not in other.json()["answer"]
    assert other.json()["memories_used"] == []
    own_calls = sum(m["calls"] for m in other.json()["usage"]["by_model"].values())
    assert (await other_api.get("/v1/usage", user_id="u")).json()["total"]["calls"] == own_calls
    ours = (await api.get("/v1/usage", user_id="u")).json()["by_kind"]
    assert ours["chat"]["calls"] == 2  # tool call, then answer
    assert ours["embed"]["calls"] >= 1  # the local embedder's calls count too, with no tokens
    assert ours["embed"]["total_tokens"] == 0


async def test_a_correction_naming_the_old_value_supersedes_it_even_without_a_shared_slot(api: Api) -> None:
    await chat(api, "Remember I drink rooibos every evening.", "s1")
    await chat(api, "Oh wait, I switched from rooibos to chamomile.", "s1")
    memories = (await api.get("/v1/memories", user_id="u")).json()["items"]
    rooibos = [m for m in memories if "rooibos" in m["content"].lower()]
    assert rooibos
    assert all(m["status"] == "superseded" for m in rooibos)
    current = await active(api)
    assert any("chamomile" in m["content"] for m in current)
    event = (await api.get(f"/v1/memories/{rooibos[0]['id']}/history")).json()["events"][0]
    assert event["kind"] == "superseded"
    assert event["details"]["rule"] == "model"


async def test_forgetting_something_never_stored_forgets_nothing_else(api: Api) -> None:
    await chat(api, "Remember I won a chess tournament in 2023.", "s1")
    before = await active(api)
    result = await chat(api, "Forget what you know about my sailing course.", "s2")
    assert [c["name"] for c in result["tool_calls"]] == ["forget"]
    assert result["tool_calls"][0]["result"]["forgotten"] == []
    assert await active(api) == before


async def test_extract_by_another_tenant_never_touches_our_memories(api: Api, other_api: Api) -> None:
    await chat(api, "I prefer dark mode", "s1")
    before = await active(api)
    response = await other_api.post(
        "/v1/memories/extract",
        {"user_id": "u", "messages": [{"role": "user", "content": "Forget my theme preference"}]},
    )
    assert response.status_code == 200
    assert response.json()["actions"] == []
    assert await active(api) == before
    usage = (await other_api.get("/v1/usage")).json()
    # The offline extractor is rules, not a model: one call, metered at zero tokens.
    assert usage["by_kind"]["extract"] == {
        "calls": 1,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
    }
    assert usage["total"]["total_tokens"] == 0


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat", {"user_id": "u"}),
        ("/v1/chat", {"user_id": "u", "message": ""}),
        ("/v1/chat", {"user_id": "u", "message": "x" * 8001}),
        ("/v1/chat", {"user_id": "u", "message": "hi", "token_budget": 0}),
        ("/v1/chat", {"user_id": "u", "message": "hi", "surprise": True}),
        ("/v1/chat", {"user_id": "u", "message": "nul\x00byte"}),
        ("/v1/memories/extract", {"user_id": "u", "messages": []}),
        ("/v1/memories/extract", {"user_id": "u", "messages": [{"role": "robot", "content": "hi"}]}),
        ("/v1/memories/extract", {"user_id": "u", "messages": [{"role": "user", "content": ""}]}),
        ("/v1/memories/extract", {"user_id": "u", "messages": [{"role": "user", "content": "a"}] * 51}),
    ],
)
async def test_bad_agent_input_is_422_and_writes_nothing(api: Api, path: str, body: dict[str, Any]) -> None:
    response = await api.post(path, body)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error"
    assert (await api.get("/v1/memories", user_id="u")).json()["items"] == []
    assert (await api.get("/v1/usage")).json()["total"]["calls"] == 0


async def test_usage_rejects_bad_time_ranges(api: Api) -> None:
    assert (await api.get("/v1/usage", since="not-a-date")).status_code in (400, 422)
    assert (await api.get("/v1/usage", since="0001-01-01T00:00:00Z")).status_code == 422


async def test_readme_dinner_dish_after_a_diet_recalls_the_diet(api: Api) -> None:
    """README's chat example: a standing diet reaches a question that does not name it."""
    await chat(api, "I am strictly vegetarian", "s1")
    [diet] = await active(api)
    assert "vegetarian" in diet["content"]
    asked = await chat(api, "suggest a dinner dish", "s2")
    assert diet["id"] in asked["memories_used"]
    assert "vegetarian" in asked["answer"]


async def test_a_diet_given_as_the_reason_of_a_question_is_remembered(api: Api) -> None:
    """A user's circumstances inside a request ("..., given that I am strictly vegetarian?") are stored
    as they would be on their own, and the request still recalls."""
    asked = await chat(api, "Can you suggest a dinner dish, given that I am strictly vegetarian?", "s1")
    assert [c["name"] for c in asked["tool_calls"]] == ["remember", "recall"]
    [diet] = await active(api)
    assert diet["subject"] == "diet"
    assert "vegetarian" in diet["content"]
    assert "?" not in diet["content"]
    later = await chat(api, "What is my diet?", "s2")
    assert diet["id"] in later["memories_used"]


async def test_readme_correction_through_chat_keeps_the_slot_and_answers_the_new_city(api: Api) -> None:
    """README's chat example: "Actually, it's Lisbon, not Porto" supersedes the city, one per slot."""
    await chat(api, "I live in Porto", "s1")
    [porto] = await active(api)
    await chat(api, "Actually, it's Lisbon, not Porto", "s2")
    [lisbon] = await active(api)
    assert "Lisbon" in lisbon["content"]
    assert lisbon["subject"] == porto["subject"]
    old = (await api.get(f"/v1/memories/{porto['id']}")).json()
    assert old["status"] == "superseded"
    assert old["superseded_by"] == lisbon["id"]
    asked = await chat(api, "Where do I live?", "s3")
    assert "Lisbon" in asked["answer"]
    assert "Porto" not in asked["answer"]
    assert lisbon["id"] in asked["memories_used"]
