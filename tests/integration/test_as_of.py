"""As-of recall (issue 25, item 1), through HTTP: what was current at an instant, in valid time (observed,
superseded) and in recorded time (the audit log), on recall, the list and history; a question about the
past recalls superseded memories, marked; a question about the present never does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import Api, NewTenant
from tests.support.live_server import LiveServer
from tests.support.mcp_client import mcp_over_http, structured, tool_error

USER = "alice"
FRAMEWORK = {"type": "decision", "subject": "frontend framework"}
REACT = "Use React and Vite for the frontend"
NEXTJS = "We are switching to Next.js for the frontend"
PRESENT_QUESTION = "which frontend framework do we use?"
T1 = "2026-01-10T09:00:00Z"  # React observed
BETWEEN = "2026-03-01T00:00:00Z"
T2 = "2026-06-01T09:00:00Z"  # Next.js observed
AFTER = "2026-07-01T00:00:00Z"


def stamp() -> str:
    return datetime.now(UTC).isoformat()


async def tick() -> None:
    """Let the clock move past the last request's timestamps."""
    await asyncio.sleep(0.02)


async def frontend(api: Api, *, observed: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """React, then Next.js in the same slot (Next.js supersedes React)."""
    react = await api.remember(
        user_id=USER, content=REACT, **FRAMEWORK, **({"observed_at": T1} if observed else {})
    )
    if not observed:
        await tick()
    nextjs = await api.remember(
        user_id=USER, content=NEXTJS, **FRAMEWORK, **({"observed_at": T2} if observed else {})
    )
    assert nextjs["superseded"] == [react["memory"]["id"]]
    return react["memory"], nextjs["memory"]


def ids(recall: dict[str, Any]) -> list[str]:
    return [m["memory"]["id"] for m in recall["memories"]]


async def test_recall_as_of_between_the_two_returns_react_and_never_next_js(api: Api) -> None:
    react, nextjs = await frontend(api)
    then = await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=BETWEEN)
    assert ids(then) == [react["id"]]
    assert "React" in then["context"]
    assert "Next.js" not in then["context"]
    assert "(superseded 1 Jun 2026)" in then["context"]  # current then, superseded since
    assert then["trace"]["as_of"].startswith("2026-03-01T00:00:00")
    assert then["trace"]["as_of_kind"] == "valid"
    assert then["trace"]["included"][0]["superseded"] is True

    later = await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=AFTER)
    assert ids(later) == [nextjs["id"]]
    before_both = await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of="2025-12-01T00:00:00Z")
    assert before_both["memories"] == []
    assert before_both["context"] == ""


async def test_a_question_about_the_past_returns_react_marked_superseded(api: Api) -> None:
    react, nextjs = await frontend(api)
    recall = await api.recall(user_id=USER, query="what did we use before Next.js?")
    assert react["id"] in ids(recall)
    [line] = [line for line in recall["context"].splitlines() if "React" in line]
    assert line == f"- [decision: frontend framework] (superseded 1 Jun 2026) {REACT}"
    assert recall["trace"]["past"] is True
    assert recall["trace"]["as_of"] is None
    marked = {i["id"]: i["superseded"] for i in recall["trace"]["included"]}
    assert marked[react["id"]] is True
    assert marked.get(nextjs["id"], False) is False
    # Looking into the past is not a use of what is current: the superseded memory is not reinforced.
    assert (await api.memory(react["id"]))["access_count"] == 0
    assert (await api.memory(nextjs["id"]))["access_count"] == (1 if nextjs["id"] in marked else 0)


@pytest.mark.parametrize(
    "query", [PRESENT_QUESTION, "what do we use now?", "before I forget, which framework do we use?"]
)
async def test_a_present_tense_recall_never_returns_the_superseded_memory(api: Api, query: str) -> None:
    react, nextjs = await frontend(api)
    recall = await api.recall(user_id=USER, query=query)
    assert react["id"] not in ids(recall)
    assert "React" not in recall["context"]
    assert "superseded" not in recall["context"]
    assert recall["trace"]["past"] is False
    skipped = {s["id"] for s in recall["trace"]["skipped"]}
    assert react["id"] not in skipped  # never a candidate: not read at all
    assert ids(recall) == [nextjs["id"]]


async def test_recorded_time_is_what_engram_held_then(api: Api) -> None:
    before = stamp()
    await tick()
    react = (await api.remember(user_id=USER, content=REACT, **FRAMEWORK, observed_at=T1))["memory"]
    await tick()
    between = stamp()
    await tick()
    nextjs = (await api.remember(user_id=USER, content=NEXTJS, **FRAMEWORK, observed_at=T2))["memory"]
    await tick()
    after = stamp()

    def held(at: str) -> Any:
        return api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=at, as_of_kind="recorded")

    assert (await held(before))["memories"] == []  # a memory written after T is never returned for T
    assert ids(await held(between)) == [react["id"]]
    assert ids(await held(after)) == [nextjs["id"]]
    # In valid time the same early instant already knows both, as Engram knows them now.
    assert ids(await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=BETWEEN)) == [react["id"]]
    assert (await held(BETWEEN))["memories"] == []


async def test_a_forgotten_memory_is_current_until_it_was_forgotten(api: Api) -> None:
    _, nextjs = await frontend(api, observed=False)
    await tick()
    before_forget = stamp()
    await tick()
    forgotten = await api.post("/v1/forget", {"user_id": USER, "memory_id": nextjs["id"]})
    assert forgotten.json()["forgotten"] == [nextjs["id"]]
    await tick()
    after_forget = stamp()
    for kind in ("valid", "recorded"):
        then = await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=before_forget, as_of_kind=kind)
        assert ids(then) == [nextjs["id"]], kind
        since = await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=after_forget, as_of_kind=kind)
        assert since["memories"] == [], kind
    now = await api.recall(user_id=USER, query=PRESENT_QUESTION)
    assert now["memories"] == []


async def test_a_future_as_of_behaves_as_now(api: Api) -> None:
    _, nextjs = await frontend(api)
    now = await api.recall(user_id=USER, query=PRESENT_QUESTION)
    future = await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of="2150-01-01T00:00:00+02:00")
    assert ids(future) == ids(now) == [nextjs["id"]]
    assert future["context"] == now["context"]
    assert future["trace"]["as_of"] is None
    assert future["trace"]["as_of_kind"] is None


async def test_as_of_keeps_the_token_budget(api: Api) -> None:
    items = [
        {"user_id": USER, "content": f"Frontend framework note {i} about build step {i}", "observed_at": T1}
        for i in range(30)
    ]
    assert (await api.post("/v1/memories/batch", {"items": items})).status_code == 201
    recall = await api.recall(user_id=USER, query="frontend framework build", as_of=BETWEEN, token_budget=40)
    assert 0 < recall["tokens_used"] <= 40
    assert any(s["reason"] == "budget" for s in recall["trace"]["skipped"])


async def test_list_as_of_returns_the_memories_current_then(api: Api) -> None:
    react, nextjs = await frontend(api)

    async def listed(**params: Any) -> list[str]:
        response = await api.get("/v1/memories", user_id=USER, **params)
        assert response.status_code == 200, response.text
        return [m["id"] for m in response.json()["items"]]

    assert await listed(as_of=BETWEEN) == [react["id"]]
    assert await listed(as_of=AFTER) == [nextjs["id"]]
    assert await listed(as_of=BETWEEN, as_of_kind="recorded") == []
    assert await listed(as_of=stamp(), as_of_kind="recorded") == [nextjs["id"]]
    assert set(await listed()) == {react["id"], nextjs["id"]}  # without as_of: every status, as before


async def test_history_as_of_shows_the_chain_as_it_stood(api: Api) -> None:
    react, nextjs = await frontend(api)
    response = await api.get(f"/v1/memories/{nextjs['id']}/history", as_of=BETWEEN)
    assert response.status_code == 200, response.text
    then = response.json()
    assert [v["id"] for v in then["versions"]] == [react["id"]]  # Next.js was observed later
    assert then["current"] == [react["id"]]

    later = (await api.get(f"/v1/memories/{react['id']}/history", as_of=AFTER)).json()
    assert [v["id"] for v in later["versions"]] == [nextjs["id"], react["id"]]
    assert later["current"] == [nextjs["id"]]

    whole = (await api.get(f"/v1/memories/{react['id']}/history")).json()
    assert whole["current"] is None
    assert {e["kind"] for e in whole["events"]} >= {"created", "superseded"}


async def test_history_in_recorded_time_keeps_only_what_was_written_by_then(api: Api) -> None:
    react = (await api.remember(user_id=USER, content=REACT, **FRAMEWORK))["memory"]
    await tick()
    between = stamp()
    await tick()
    await api.remember(user_id=USER, content=NEXTJS, **FRAMEWORK)
    response = await api.get(f"/v1/memories/{react['id']}/history", as_of=between, as_of_kind="recorded")
    then = response.json()
    assert [v["id"] for v in then["versions"]] == [react["id"]]
    assert [e["kind"] for e in then["events"]] == ["created"]  # the supersession came later
    assert then["current"] == [react["id"]]


@pytest.mark.parametrize(
    "as_of",
    ["2026-03-01T00:00:00", "2026-03-01", "yesterday", "", "1800-01-01T00:00:00Z", 1767225600],
)
async def test_a_naive_or_malformed_as_of_on_recall_is_a_422_and_changes_nothing(
    api: Api, as_of: Any
) -> None:
    react, nextjs = await frontend(api)
    before = (await api.get(f"/v1/memories/{react['id']}/history")).json()
    response = await api.post("/v1/recall", {"user_id": USER, "query": PRESENT_QUESTION, "as_of": as_of})
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error"
    assert set(response.json()) == {"error", "detail"}
    assert (await api.get(f"/v1/memories/{react['id']}/history")).json() == before
    assert (await api.memory(nextjs["id"]))["access_count"] == 0


async def test_a_bad_as_of_kind_is_a_422(api: Api) -> None:
    response = await api.post(
        "/v1/recall", {"user_id": USER, "query": PRESENT_QUESTION, "as_of": BETWEEN, "as_of_kind": "guess"}
    )
    assert response.status_code == 422, response.text
    react, _ = await frontend(api)
    listed = await api.get("/v1/memories", user_id=USER, as_of=BETWEEN, as_of_kind="guess")
    assert listed.status_code == 422, listed.text
    history = await api.get(f"/v1/memories/{react['id']}/history", as_of=BETWEEN, as_of_kind="guess")
    assert history.status_code == 422, history.text


@pytest.mark.parametrize("as_of", ["2026-03-01T00:00:00", "yesterday", "1800-01-01T00:00:00Z"])
async def test_a_naive_or_malformed_as_of_on_list_and_history_is_a_422(api: Api, as_of: str) -> None:
    react, _ = await frontend(api)
    for path, params in (
        ("/v1/memories", {"user_id": USER}),
        (f"/v1/memories/{react['id']}/history", {}),
    ):
        response = await api.get(path, **params, as_of=as_of)
        assert response.status_code == 422, (path, response.text)
        body = response.json()
        assert body["error"] == "validation_error", body
        assert body["detail"], body


async def test_another_tenant_with_as_of_sees_nothing_of_ours(api: Api, other_api: Api) -> None:
    react, nextjs = await frontend(api)
    for kind in ("valid", "recorded"):
        for at in (BETWEEN, AFTER, stamp()):
            recall = await other_api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=at, as_of_kind=kind)
            assert recall["memories"] == []
            assert recall["context"] == ""
            assert recall["trace"]["candidates"] == 0
            listed = await other_api.get("/v1/memories", user_id=USER, as_of=at, as_of_kind=kind)
            assert listed.json()["items"] == []
            for memory in (react, nextjs):
                history = await other_api.get(
                    f"/v1/memories/{memory['id']}/history", as_of=at, as_of_kind=kind
                )
                assert history.status_code == 404
                assert history.json()["error"] == "not_found"
    past = await other_api.recall(user_id=USER, query="what did we use before Next.js?")
    assert past["memories"] == []
    # And ours still answer as before.
    assert ids(await api.recall(user_id=USER, query=PRESENT_QUESTION, as_of=BETWEEN)) == [react["id"]]


@pytest.fixture(scope="module")
def served(settings: Settings) -> Iterator[str]:
    with LiveServer(create_app(settings), name="engram-as-of") as server:
        yield server.url


async def test_the_mcp_recall_tool_takes_as_of(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    async with mcp_over_http(served, key, user=USER) as client:
        react = structured(await client.call_tool("remember", {"content": REACT, **FRAMEWORK}))
        await tick()
        between = stamp()
        await tick()
        nextjs = structured(await client.call_tool("remember", {"content": NEXTJS, **FRAMEWORK}))
        then = structured(
            await client.call_tool(
                "recall", {"query": PRESENT_QUESTION, "as_of": between, "as_of_kind": "recorded"}
            )
        )
        now = structured(await client.call_tool("recall", {"query": PRESENT_QUESTION}))
        naive = tool_error(
            await client.call_tool("recall", {"query": PRESENT_QUESTION, "as_of": "2026-03-01T00:00:00"})
        )
    assert [m["id"] for m in then["memories"]] == [react["id"]]
    assert "(superseded " in then["context"]
    assert [m["id"] for m in now["memories"]] == [nextjs["id"]]
    assert naive["error"] == "validation_error"
