"""Privacy levels: `sensitive` never reaches a recall or chat context unless asked for, `private` pays a
score penalty (the setting), and both stay visible to the owner in list and export."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from app.lib.clock import FrozenClock
from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client

USER = "privacy-user"
SENSITIVE = "Takes sertraline for anxiety every morning"
QUERY = "which medication does the user take every morning?"


@dataclass(frozen=True)
class Seen:
    """What a path put in front of the model: the memory ids and the text."""

    ids: list[str]
    text: str


async def via_recall(api: Api, query: str, include_sensitive: bool) -> Seen:
    body = await api.recall(user_id=USER, query=query, include_sensitive=include_sensitive, min_relevance=0)
    return Seen([m["memory"]["id"] for m in body["memories"]], body["context"])


async def via_chat(api: Api, query: str, include_sensitive: bool) -> Seen:
    # Chat has no include_sensitive switch: its context never holds a sensitive memory.
    response = await api.post("/v1/chat", {"user_id": USER, "message": query, "session_id": "privacy"})
    assert response.status_code == 200, response.text
    body = response.json()
    included = [i["id"] for i in (body["trace"] or {}).get("included", [])]
    calls = " ".join(str(c["result"]) for c in body["tool_calls"])
    return Seen([*body["memories_used"], *included], f"{body['answer']} {calls}")


# Every path that builds a model's context; a new one is one line here.
CONTEXT_PATHS: dict[str, Callable[[Api, str, bool], Awaitable[Seen]]] = {
    "recall": via_recall,
    "chat": via_chat,
}
CAN_INCLUDE_SENSITIVE = {"recall"}


@pytest.mark.parametrize("path", list(CONTEXT_PATHS))
async def test_a_sensitive_memory_never_enters_a_context_unless_requested(api: Api, path: str) -> None:
    sensitive = await api.remember(user_id=USER, content=SENSITIVE, privacy="sensitive", type="fact")
    public = await api.remember(user_id=USER, content="Drinks green tea every morning", type="preference")
    seen = await CONTEXT_PATHS[path](api, QUERY, False)
    assert sensitive["memory"]["id"] not in seen.ids
    assert "sertraline" not in seen.text
    assert public["memory"]["id"] in seen.ids or path == "chat"  # recall still answers with the rest
    if path in CAN_INCLUDE_SENSITIVE:
        requested = await CONTEXT_PATHS[path](api, QUERY, True)
        assert sensitive["memory"]["id"] in requested.ids
        assert "sertraline" in requested.text


async def test_sensitive_and_private_memories_are_visible_to_the_owner(api: Api) -> None:
    sensitive = await api.remember(user_id=USER, content=SENSITIVE, privacy="sensitive")
    private = await api.remember(user_id=USER, content="Salary review is every March", privacy="private")
    listing = {m["id"]: m for m in (await api.get("/v1/memories", user_id=USER)).json()["items"]}
    assert listing[sensitive["memory"]["id"]]["privacy"] == "sensitive"
    assert listing[private["memory"]["id"]]["privacy"] == "private"
    assert (await api.get(f"/v1/memories/{sensitive['memory']['id']}")).json()["content"] == SENSITIVE
    exported = {m["id"]: m for m in (await api.get("/v1/export", user_id=USER)).json()["memories"]}
    assert exported[sensitive["memory"]["id"]]["privacy"] == "sensitive"
    assert exported[private["memory"]["id"]]["content"] == "Salary review is every March"
    markdown = (await api.get("/v1/export", user_id=USER, format="markdown")).text
    lines = markdown.splitlines()
    assert any(line.startswith(f"- {SENSITIVE} _(") and "sensitive)_" in line for line in lines)
    assert any(line.startswith("- Salary review is every March _(") and "private)_" in line for line in lines)


@pytest.fixture
async def frozen(settings: Settings, new_tenant: NewTenant) -> AsyncIterator[Api]:
    tenant_id, key = await new_tenant()
    async with running_client(settings, clock=FrozenClock(datetime(2026, 3, 1, tzinfo=UTC))) as client:
        yield Api(client, key, tenant_id)


async def test_a_private_memory_pays_exactly_the_configured_penalty(frozen: Api, settings: Settings) -> None:
    api = frozen
    memory = await api.remember(user_id=USER, content="Salary review is every March", type="fact")
    query = {"user_id": USER, "query": "when is the salary review?"}
    public = (await api.recall(**query))["memories"][0]
    assert public["components"]["privacy_penalty"] == 0.0
    patched = await api.patch(f"/v1/memories/{memory['memory']['id']}", {"privacy": "private"})
    assert patched.status_code == 200
    private = (await api.recall(**query))["memories"][0]
    assert private["memory"]["id"] == memory["memory"]["id"]  # still recalled
    assert private["components"]["privacy_penalty"] == 1.0
    assert public["score"] - private["score"] == pytest.approx(settings.weights.privacy_penalty, abs=1e-5)
