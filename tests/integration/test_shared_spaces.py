"""Shared scopes over HTTP: agent-private memories, shared spaces, and promotion into a space that stays
pending until a person (or the space's policy) approves it, with both actors in the audit.

Two agents of one tenant serve the same user: B never sees A's private memories; A's memory promoted to a
space is invisible until approved, then every agent granted on the space recalls it. Another tenant can
neither list, grant, propose nor approve on these spaces, and its agents never recall them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.lib.settings import Settings
from app.main import create_app
from app.tenancy import admin
from tests.conftest import Api
from tests.support.live_server import LiveServer
from tests.support.mcp_client import mcp_over_http, structured

USER = "alice"
SECRET_PLAN = "The launch codename for the spring release is Bluebird"
QUERY = "what is the launch codename for the spring release?"
COFFEE = "I drink coffee every morning"
COFFEE_AGAIN = "Every morning I drink coffee"  # the offline dreamer proposes merging the two


@pytest.fixture
async def pair(client: AsyncTestClient[Any], owner_engine: AsyncEngine) -> tuple[Api, Api]:
    """One tenant, two keys: the agents' (who proposes) and a person's (who approves)."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        created = await admin.create_tenant(session, name)
        reviewer = await admin.create_key(session, name, "reviewer")
    return (
        Api(client, created.plaintext, created.tenant_id),
        Api(client, reviewer.plaintext, created.tenant_id),
    )


async def make_space(api: Api, name: str, *agents: str, auto_approve: bool = False) -> None:
    response = await api.post("/v1/spaces", {"name": name, "auto_approve": auto_approve})
    assert response.status_code == 201, response.text
    for agent in agents:
        granted = await api.post(f"/v1/spaces/{name}/grants", {"agent_id": agent})
        assert granted.status_code == 200, granted.text


async def propose(api: Api, space: str, memory_id: str, agent: str) -> dict[str, Any]:
    response = await api.post(f"/v1/spaces/{space}/promotions", {"memory_id": memory_id, "agent_id": agent})
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


async def recalled(api: Api, agent: str | None, query: str = QUERY, user: str = USER) -> list[str]:
    body: dict[str, Any] = {"user_id": user, "query": query, "min_relevance": 0.0}
    if agent is not None:
        body["agent_id"] = agent
    result = await api.recall(**body)
    return [m["memory"]["content"] for m in result["memories"]]


async def events(api: Api, memory_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/memories/{memory_id}/history")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["events"]
    return found


async def key_actor(api: Api) -> str:
    """The audit's name for a key: the actor of an event it caused."""
    probe = await api.remember(
        user_id=f"probe-{uuid.uuid4().hex[:6]}", content="A probe memory for the actor"
    )
    [created] = await events(api, probe["memory"]["id"])
    return str(created["actor"])


async def test_agent_never_sees_another_agents_private_memories(api: Api) -> None:
    await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a")
    await api.remember(user_id=USER, content="The spring release ships in April", agent_id=None)
    assert SECRET_PLAN in await recalled(api, "agent-a")
    seen_by_b = await recalled(api, "agent-b")
    assert SECRET_PLAN not in seen_by_b
    assert "The spring release ships in April" in seen_by_b  # the user's own: every agent's
    assert SECRET_PLAN in await recalled(api, None)  # no agent: exactly as before agents existed


async def test_agents_slots_are_their_own(api: Api) -> None:
    """An agent's write in a slot does not supersede another agent's memory of that slot."""
    first = await api.remember(
        user_id=USER, content="Standup is at 9:30", subject="standup", agent_id="agent-a"
    )
    second = await api.remember(
        user_id=USER, content="Standup is at 10:00", subject="standup", agent_id="agent-b"
    )
    assert second["action"] == "created"
    assert second["superseded"] == []
    assert (await api.memory(first["memory"]["id"]))["status"] == "active"
    assert "Standup is at 9:30" not in await recalled(api, "agent-b", "when is standup?")


async def test_promotion_is_pending_until_approved_then_granted_agents_recall_it(
    pair: tuple[Api, Api],
) -> None:
    agents, reviewer = pair
    await make_space(agents, "launch-team", "agent-a", "agent-b")
    source = (await agents.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    proposal = await propose(agents, "launch-team", source["id"], "agent-a")
    assert proposal["status"] == "proposed"
    assert proposal["kind"] == "promote"
    assert SECRET_PLAN not in await recalled(agents, "agent-b")  # pending: nothing in the space yet

    approved = await reviewer.post(f"/v1/dream/proposals/{proposal['id']}/approve")
    assert approved.status_code == 200, approved.text
    decided = approved.json()
    assert decided["status"] == "applied"
    copy_id = decided["payload"]["promoted_into"]

    assert SECRET_PLAN in await recalled(agents, "agent-b")
    assert SECRET_PLAN in await recalled(agents, "agent-b", user="bob")  # a space is not one user's
    assert SECRET_PLAN not in await recalled(agents, "agent-c")  # not granted

    proposer, approver = await key_actor(agents), await key_actor(reviewer)
    assert proposer != approver
    trail = {e["kind"]: e for e in await events(agents, source["id"])}
    assert trail["proposed"]["actor"] == proposer
    assert trail["proposed"]["details"]["agent_id"] == "agent-a"
    assert trail["proposal_approved"]["actor"] == approver
    promoted = next(e for e in await events(agents, copy_id) if e["kind"] == "promoted")
    assert promoted["details"]["proposed_by"] == proposer
    assert promoted["details"]["proposer_agent"] == "agent-a"
    assert promoted["details"]["proposer_user"] == USER
    assert promoted["details"]["approved_by"] == approver
    assert promoted["details"]["promoted_from"] == source["id"]
    users = (await agents.get("/v1/users")).json()["items"]
    assert "" not in [u["user_id"] for u in users]  # a space's memories are no user's
    copy = await agents.memory(copy_id)
    assert copy["content"] == SECRET_PLAN
    assert copy["source"] == "promotion"
    assert copy["user_id"] == ""
    assert copy["space"] == "launch-team"
    assert copy["agent_id"] is None
    assert source["agent_id"] == "agent-a"
    assert source["space"] is None


async def test_revoked_agent_no_longer_recalls_the_space(api: Api) -> None:
    await make_space(api, "ops", "agent-a", "agent-b", auto_approve=True)
    source = (await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    await propose(api, "ops", source["id"], "agent-a")
    assert SECRET_PLAN in await recalled(api, "agent-b")
    revoked = await api.client.delete("/v1/spaces/ops/grants/agent-b", headers=api.headers)
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["agent_id"] == "agent-b"
    assert SECRET_PLAN not in await recalled(api, "agent-b")


async def test_auto_approve_space_applies_the_promotion_at_once(api: Api) -> None:
    await make_space(api, "auto", "agent-a", "agent-b", auto_approve=True)
    source = (await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    proposal = await propose(api, "auto", source["id"], "agent-a")
    assert proposal["status"] == "applied"
    assert proposal["payload"]["decided_by"] == "policy:auto_approve"
    assert SECRET_PLAN in await recalled(api, "agent-b")
    trail = {e["kind"]: e for e in await events(api, source["id"])}
    assert trail["proposal_approved"]["actor"] == "policy:auto_approve"
    # A person removes a space's memory by id, like any other.
    removed = await api.client.delete(
        f"/v1/memories/{proposal['payload']['promoted_into']}", headers=api.headers
    )
    assert removed.status_code == 200, removed.text
    assert SECRET_PLAN not in await recalled(api, "agent-b")


async def test_rejected_promotion_writes_nothing_into_the_space(pair: tuple[Api, Api]) -> None:
    agents, reviewer = pair
    await make_space(agents, "design", "agent-a", "agent-b")
    source = (await agents.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    proposal = await propose(agents, "design", source["id"], "agent-a")
    rejected = await reviewer.post(f"/v1/dream/proposals/{proposal['id']}/reject")
    assert rejected.status_code == 200
    assert rejected.json()["status"] == "rejected"
    assert SECRET_PLAN not in await recalled(agents, "agent-b")
    applied = await agents.post("/v1/dream/apply", {"proposal_ids": [proposal["id"]]})
    assert applied.status_code == 200
    assert applied.json()["applied"] == 0
    assert SECRET_PLAN not in await recalled(agents, "agent-b")


async def test_a_newer_promotion_supersedes_the_spaces_memory_of_the_same_slot(api: Api) -> None:
    await make_space(api, "frontend", "agent-a", "agent-b", auto_approve=True)
    old = await api.remember(
        user_id=USER,
        content="We build the frontend with React",
        subject="frontend framework",
        agent_id="agent-a",
    )
    first = await propose(api, "frontend", old["memory"]["id"], "agent-a")
    new = await api.remember(
        user_id="carol", content="We build the frontend with Next.js", subject="frontend framework"
    )
    second = await propose(api, "frontend", new["memory"]["id"], "agent-b")
    old_copy = await api.memory(first["payload"]["promoted_into"])
    assert old_copy["status"] == "superseded"
    assert old_copy["superseded_by"] == second["payload"]["promoted_into"]
    seen = await recalled(api, "agent-a", "which frontend framework do we use?")
    assert "We build the frontend with Next.js" in seen


async def test_a_promoted_copy_carries_no_secret(api: Api) -> None:
    await make_space(api, "infra", "agent-a", auto_approve=True)
    source = await api.remember(
        user_id=USER, content="The staging password is hunter2-Zq9vX7pL", agent_id="agent-a"
    )
    promoted = await propose(api, "infra", source["memory"]["id"], "agent-a")
    copy = await api.memory(promoted["payload"]["promoted_into"])
    assert "hunter2-Zq9vX7pL" not in copy["content"]


async def snapshot(api: Api) -> tuple[Any, ...]:
    spaces = (await api.get("/v1/spaces")).json()
    proposals = (await api.get("/v1/dream/proposals", user_id=USER)).json()["items"]
    memories = (await api.get("/v1/memories", user_id=USER)).json()["items"]
    return spaces, [p["id"] for p in proposals], [(m["id"], m["status"]) for m in memories]


async def test_bad_requests_are_4xx_and_write_nothing(api: Api) -> None:
    await make_space(api, "team", "agent-a")
    await api.post("/v1/spaces/team/grants", {"agent_id": "reader", "can_propose": False})
    mine = (await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    others = (await api.remember(user_id=USER, content="Agent b keeps this", agent_id="agent-b"))["memory"]
    before = await snapshot(api)
    cases: list[tuple[str, str, Any, int]] = [
        ("POST", "/v1/spaces", {"name": "team"}, 409),  # exists already
        ("POST", "/v1/spaces", {"name": "bad name!"}, 422),
        ("POST", "/v1/spaces", {"name": ""}, 422),
        ("POST", "/v1/spaces", {"name": "x", "unknown": 1}, 422),
        ("POST", "/v1/spaces/nope/grants", {"agent_id": "agent-a"}, 404),
        ("POST", "/v1/spaces/team/grants", {"agent_id": ""}, 422),
        ("POST", "/v1/spaces/bad%20name/grants", {"agent_id": "agent-a"}, 422),
        ("DELETE", "/v1/spaces/nope/grants/agent-a", None, 404),
        ("DELETE", "/v1/spaces/team/grants/never-granted", None, 404),
        ("POST", "/v1/spaces/nope/promotions", {"memory_id": mine["id"], "agent_id": "agent-a"}, 404),
        ("POST", "/v1/spaces/team/promotions", {"memory_id": mine["id"], "agent_id": "agent-z"}, 403),
        ("POST", "/v1/spaces/team/promotions", {"memory_id": mine["id"], "agent_id": "reader"}, 403),
        ("POST", "/v1/spaces/team/promotions", {"memory_id": others["id"], "agent_id": "agent-a"}, 404),
        ("POST", "/v1/spaces/team/promotions", {"memory_id": str(uuid.uuid4()), "agent_id": "agent-a"}, 404),
        ("POST", "/v1/spaces/team/promotions", {"memory_id": "not-a-uuid", "agent_id": "agent-a"}, 422),
        ("POST", "/v1/spaces/team/promotions", {"memory_id": mine["id"]}, 422),
        ("POST", "/v1/memories", {"user_id": USER, "content": "x", "agent_id": ""}, 422),
        ("POST", "/v1/recall", {"user_id": USER, "query": "x", "agent_id": "a\u0000b"}, 422),
    ]
    for method, path, body, status in cases:
        response = await api.client.request(method, path, json=body, headers=api.headers)
        assert response.status_code == status, (method, path, body, response.text)
        payload = response.json()
        assert set(payload) == {"error", "detail"}, payload
    assert await snapshot(api) == before


async def test_a_second_open_promotion_of_the_same_memory_is_a_conflict(api: Api) -> None:
    await make_space(api, "team", "agent-a")
    mine = (await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    await propose(api, "team", mine["id"], "agent-a")
    again = await api.post("/v1/spaces/team/promotions", {"memory_id": mine["id"], "agent_id": "agent-a"})
    assert again.status_code == 409, again.text


async def test_spaces_routes_refuse_a_missing_key(api: Api) -> None:
    for method, path in [
        ("POST", "/v1/spaces"),
        ("GET", "/v1/spaces"),
        ("POST", "/v1/spaces/team/grants"),
        ("DELETE", "/v1/spaces/team/grants/agent-a"),
        ("POST", "/v1/spaces/team/promotions"),
    ]:
        response = await api.client.request(method, path)
        assert response.status_code == 401, (method, path, response.text)


async def test_another_tenant_cannot_list_grant_propose_or_approve_on_a_spaces(
    pair: tuple[Api, Api], other_api: Api
) -> None:
    agents, _ = pair
    await make_space(agents, "launch-team", "agent-a", "agent-b")
    source = (await agents.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    pending = await propose(agents, "launch-team", source["id"], "agent-a")

    assert (await other_api.get("/v1/spaces")).json()["items"] == []
    grant = await other_api.post("/v1/spaces/launch-team/grants", {"agent_id": "agent-b"})
    assert grant.status_code == 404, grant.text
    revoke = await other_api.client.delete("/v1/spaces/launch-team/grants/agent-a", headers=other_api.headers)
    assert revoke.status_code == 404, revoke.text
    theirs = (await other_api.remember(user_id=USER, content="An intruder's plan", agent_id="agent-a"))[
        "memory"
    ]
    into = await other_api.post(
        "/v1/spaces/launch-team/promotions", {"memory_id": theirs["id"], "agent_id": "agent-a"}
    )
    assert into.status_code == 404, into.text
    # Its own space of the same name, the same agent ids: tenant 1's memory is still not found.
    await make_space(other_api, "launch-team", "agent-a", "agent-b", auto_approve=True)
    steal = await other_api.post(
        "/v1/spaces/launch-team/promotions", {"memory_id": source["id"], "agent_id": "agent-a"}
    )
    assert steal.status_code == 404, steal.text
    approve = await other_api.post(f"/v1/dream/proposals/{pending['id']}/approve")
    assert approve.status_code == 404, approve.text
    assert SECRET_PLAN not in await recalled(agents, "agent-b")  # still pending in tenant 1

    await agents.post(f"/v1/dream/proposals/{pending['id']}/approve")
    assert SECRET_PLAN in await recalled(agents, "agent-b")
    for agent in ("agent-a", "agent-b", None):
        assert SECRET_PLAN not in await recalled(other_api, agent)
    listed = (await agents.get("/v1/spaces")).json()["items"]
    assert [s["name"] for s in listed] == ["launch-team"]
    assert [g["agent_id"] for g in listed[0]["grants"]] == ["agent-a", "agent-b"]


async def test_list_and_forget_as_an_agent_reach_only_what_it_reads(api: Api) -> None:
    await make_space(api, "ops", "agent-b", auto_approve=True)
    a_own = (await api.remember(user_id=USER, content=SECRET_PLAN, subject="codename", agent_id="agent-a"))[
        "memory"
    ]
    b_own = (await api.remember(user_id=USER, content="Agent b drafts the notes", agent_id="agent-b"))[
        "memory"
    ]
    shared = (await api.remember(user_id=USER, content="Releases go out on Tuesdays"))["memory"]
    await propose(api, "ops", b_own["id"], "agent-b")

    listed = (await api.get("/v1/memories", user_id=USER, agent_id="agent-b")).json()["items"]
    contents = sorted(m["content"] for m in listed)
    assert contents == ["Agent b drafts the notes", "Agent b drafts the notes", "Releases go out on Tuesdays"]
    everything = (await api.get("/v1/memories", user_id=USER)).json()["items"]
    assert {m["id"] for m in everything} == {a_own["id"], b_own["id"], shared["id"]}  # as before: no space's

    refused = await api.post("/v1/forget", {"user_id": USER, "memory_id": a_own["id"], "agent_id": "agent-b"})
    assert refused.status_code == 404, refused.text
    by_slot = await api.post("/v1/forget", {"user_id": USER, "subject": "codename", "agent_id": "agent-b"})
    assert by_slot.json()["forgotten"] == []
    assert (await api.memory(a_own["id"]))["status"] == "active"
    mine = await api.post("/v1/forget", {"user_id": USER, "subject": "codename", "agent_id": "agent-a"})
    assert mine.json()["forgotten"] == [a_own["id"]]


async def test_a_chat_as_an_agent_writes_that_agents_private_memories(api: Api) -> None:
    response = await api.post(
        "/v1/chat", {"user_id": USER, "message": "I live in Porto", "session_id": "s1", "agent_id": "agent-b"}
    )
    assert response.status_code == 200, response.text
    [written] = [c for c in response.json()["tool_calls"] if c["name"] == "remember"]
    memory_id = written["result"]["id"]
    assert any(
        m["id"] == memory_id
        for m in (await api.get("/v1/memories", user_id=USER, agent_id="agent-b")).json()["items"]
    )
    seen_by_a = (await api.get("/v1/memories", user_id=USER, agent_id="agent-a")).json()["items"]
    assert memory_id not in [m["id"] for m in seen_by_a]
    assert not any("Porto" in c for c in await recalled(api, "agent-a", "where do I live?"))
    assert any("Porto" in c for c in await recalled(api, "agent-b", "where do I live?"))


async def test_export_and_import_keep_a_memory_private_to_its_agent(api: Api, other_api: Api) -> None:
    await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a")
    exported = await api.get("/v1/export", user_id=USER)
    assert exported.status_code == 200, exported.text
    [memory] = exported.json()["memories"]
    assert memory["agent_id"] == "agent-a"
    imported = await other_api.client.post("/v1/import", content=exported.content, headers=other_api.headers)
    assert imported.status_code == 200, imported.text
    assert SECRET_PLAN not in await recalled(other_api, "agent-b")
    assert SECRET_PLAN in await recalled(other_api, "agent-a")


@pytest.fixture(scope="module")
def served(settings: Settings) -> Iterator[str]:
    with LiveServer(create_app(settings), name="engram-spaces-mcp") as server:
        yield server.url


async def test_an_mcp_session_acts_as_the_agent_its_client_names(served: str, api: Api) -> None:
    await make_space(api, "ops", "agent-a", "agent-b", auto_approve=True)
    async with mcp_over_http(served, api.key, user=USER, headers={"X-Engram-Agent": "agent-a"}) as client:
        written = structured(await client.call_tool("remember", {"content": SECRET_PLAN}))
    assert SECRET_PLAN in await recalled(api, "agent-a")
    assert SECRET_PLAN not in await recalled(api, "agent-b")
    async with mcp_over_http(served, api.key, user=USER, headers={"X-Engram-Agent": "agent-b"}) as client:
        before = structured(await client.call_tool("recall", {"query": QUERY}))
        await propose(api, "ops", written["id"], "agent-a")
        after = structured(await client.call_tool("recall", {"query": QUERY}))
    assert SECRET_PLAN not in before["context"]
    assert SECRET_PLAN in after["context"]  # the space's copy, now that it is approved


async def test_an_approved_merge_of_two_agents_memories_is_stale_not_shared(api: Api) -> None:
    """Dreaming reads every agent's memories of the user; a merge across agents would make a private
    memory the user's, so applying it is refused (stale) and both stay private."""
    a = (await api.remember(user_id=USER, content=COFFEE, type="preference", agent_id="agent-a"))["memory"]
    b = (await api.remember(user_id=USER, content=COFFEE_AGAIN, type="preference", agent_id="agent-b"))[
        "memory"
    ]
    dreamt = (await api.post("/v1/dream", {"user_id": USER})).json()["proposals"]
    [merge] = [p for p in dreamt if p["kind"] == "merge" and set(p["target_ids"]) == {a["id"], b["id"]}]
    assert (await api.post(f"/v1/dream/proposals/{merge['id']}/approve")).status_code == 200
    report = (await api.post("/v1/dream/apply", {"proposal_ids": [merge["id"]]})).json()
    assert (report["merged"], report["stale"]) == (0, 1)
    assert (await api.memory(a["id"]))["status"] == "active"
    assert COFFEE not in await recalled(api, "agent-b", "how do I take my coffee?")


async def test_a_promotion_whose_proposer_lost_its_grant_is_stale_when_approved(api: Api) -> None:
    await make_space(api, "team", "agent-a", "agent-b")
    source = (await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    proposal = await propose(api, "team", source["id"], "agent-a")
    await api.client.delete("/v1/spaces/team/grants/agent-a", headers=api.headers)
    decided = (await api.post(f"/v1/dream/proposals/{proposal['id']}/approve")).json()
    assert decided["status"] == "stale"
    assert "agent-a" in decided["payload"]["stale_reason"]
    assert SECRET_PLAN not in await recalled(api, "agent-b")


async def test_erasing_a_user_keeps_the_spaces_copy_but_its_audit_no_longer_names_the_user(api: Api) -> None:
    await make_space(api, "kept", "agent-a", "agent-b", auto_approve=True)
    source = (await api.remember(user_id="leaver", content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    proposal = await propose(api, "kept", source["id"], "agent-a")
    copy_id = proposal["payload"]["promoted_into"]
    before = next(e for e in await events(api, copy_id) if e["kind"] == "promoted")
    assert before["details"]["proposer_user"] == "leaver"

    erased = await api.post("/v1/users/leaver/erase")
    assert erased.status_code == 200, erased.text
    assert (await api.get(f"/v1/memories/{source['id']}")).status_code == 404
    assert (await api.memory(copy_id))["content"] == SECRET_PLAN  # approved into the space: the space's
    after = await events(api, copy_id)
    assert after, "the space copy's audit trail is kept"
    assert all("leaver" not in json.dumps(e) for e in after)


async def test_another_tenant_listing_as_our_agent_gets_nothing(api: Api, other_api: Api) -> None:
    await make_space(api, "ops", "agent-a", auto_approve=True)
    mine = (await api.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    copy_id = (await propose(api, "ops", mine["id"], "agent-a"))["payload"]["promoted_into"]
    own = (await api.get("/v1/memories", user_id=USER, agent_id="agent-a")).json()["items"]
    assert {m["id"] for m in own} == {mine["id"], copy_id}  # the same listing through our key finds both
    # Its own space of the same name granting the same agent id must not reach our space's copy.
    await make_space(other_api, "ops", "agent-a")
    for params in ({}, {"status": "active"}, {"q": "Bluebird"}):
        listed = await other_api.get("/v1/memories", user_id=USER, agent_id="agent-a", **params)
        assert listed.status_code == 200, listed.text
        assert listed.json() == {"items": [], "next_cursor": None}, params


async def test_another_tenant_forgetting_as_our_agent_forgets_nothing(api: Api, other_api: Api) -> None:
    mine = (await api.remember(user_id=USER, content=SECRET_PLAN, subject="codename", agent_id="agent-a"))[
        "memory"
    ]
    by_id = await other_api.post(
        "/v1/forget", {"user_id": USER, "memory_id": mine["id"], "agent_id": "agent-a"}
    )
    assert by_id.status_code == 404, by_id.text
    unknown_id = str(uuid.uuid4())
    unknown = await other_api.post(
        "/v1/forget", {"user_id": USER, "memory_id": unknown_id, "agent_id": "agent-a"}
    )
    assert unknown.json() == {  # indistinguishable from an id that exists nowhere
        "error": "not_found",
        "detail": by_id.json()["detail"].replace(mine["id"], unknown_id),
    }
    for body in ({"subject": "codename"}, {"query": SECRET_PLAN}):
        forgot = await other_api.post("/v1/forget", {"user_id": USER, "agent_id": "agent-a", **body})
        assert forgot.status_code == 200, forgot.text
        assert forgot.json()["forgotten"] == [], body
    assert (await api.memory(mine["id"]))["status"] == "active"
    assert [e["kind"] for e in await events(api, mine["id"])] == ["created"]
    assert SECRET_PLAN in await recalled(api, "agent-a")


async def test_another_tenant_chatting_as_the_same_agent_sees_nothing_of_our_chat(
    api: Api, other_api: Api
) -> None:
    said = {"user_id": USER, "message": "I live in Porto", "session_id": "s1", "agent_id": "agent-b"}
    response = await api.post("/v1/chat", said)
    assert response.status_code == 200, response.text
    [written] = [c for c in response.json()["tool_calls"] if c["name"] == "remember"]
    memory_id = written["result"]["id"]
    assert any("Porto" in c for c in await recalled(api, "agent-b", "where do I live?"))  # sanity

    listed = (await other_api.get("/v1/memories", user_id=USER, agent_id="agent-b")).json()
    assert listed == {"items": [], "next_cursor": None}
    recall = await other_api.recall(
        user_id=USER, query="where do I live?", agent_id="agent-b", min_relevance=0.0
    )
    assert (recall["memories"], recall["context"]) == ([], "")
    assert (await other_api.get(f"/v1/memories/{memory_id}")).status_code == 404
    question = {**said, "message": "Where do I live?"}  # the same user, session and agent
    asked = await other_api.post("/v1/chat", question)
    assert asked.status_code == 200, asked.text
    assert [c["name"] for c in asked.json()["tool_calls"]] == ["recall"]
    assert "Porto" not in asked.text
    assert asked.json()["memories_used"] == []
    assert "Porto" in (await api.post("/v1/chat", question)).json()["answer"]  # our own chat does recall it


async def test_another_tenant_cannot_reject_a_pending_promotion(
    pair: tuple[Api, Api], other_api: Api
) -> None:
    agents, reviewer = pair
    await make_space(agents, "launch-team", "agent-a", "agent-b")
    source = (await agents.remember(user_id=USER, content=SECRET_PLAN, agent_id="agent-a"))["memory"]
    pending = await propose(agents, "launch-team", source["id"], "agent-a")

    rejected = await other_api.post(f"/v1/dream/proposals/{pending['id']}/reject")
    assert rejected.status_code == 404, rejected.text
    assert rejected.json()["error"] == "not_found"
    listed = (await agents.get("/v1/dream/proposals", user_id=USER)).json()["items"]
    assert [(p["id"], p["status"]) for p in listed] == [(pending["id"], "proposed")]
    assert "proposal_rejected" not in [e["kind"] for e in await events(agents, source["id"])]
    # Still ours to decide: our reviewer approves it and the space holds the memory.
    approved = await reviewer.post(f"/v1/dream/proposals/{pending['id']}/approve")
    assert approved.status_code == 200, approved.text
    assert approved.json()["status"] == "applied"
    assert SECRET_PLAN in await recalled(agents, "agent-b")
