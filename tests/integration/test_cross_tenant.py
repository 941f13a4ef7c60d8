"""Tenant isolation over HTTP: another tenant's key never sees, changes or learns of a memory, even for the
same user_id; and every /v1 route refuses a missing, malformed, unknown or revoked key with 401."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.tenancy import admin
from tests.conftest import Api

USER = "shared-user"
EDITOR = "I prefer Neovim as my code editor"
DEADLINE = "The quarterly report is due on Friday"

# (method, path template, query params, json body) for every route that names one memory.
ID_ROUTES: list[tuple[str, str, dict[str, Any], Any]] = [
    ("GET", "/v1/memories/{id}", {}, None),
    ("PATCH", "/v1/memories/{id}", {}, {"content": "hijacked by another tenant"}),
    ("DELETE", "/v1/memories/{id}", {}, None),
    ("DELETE", "/v1/memories/{id}", {"erase": "true"}, None),
    ("POST", "/v1/memories/{id}/pin", {}, None),
    ("POST", "/v1/memories/{id}/unpin", {}, None),
    ("POST", "/v1/memories/{id}/archive", {}, None),
    ("POST", "/v1/memories/{id}/restore", {}, None),
    ("GET", "/v1/memories/{id}/history", {}, None),
    ("POST", "/v1/forget", {}, {"user_id": USER, "memory_id": "{id}"}),
]

# Every /v1 route, with a body that is valid, so that only the credentials can be at fault.
ALL_ROUTES: list[tuple[str, str, dict[str, Any], Any]] = [
    ("POST", "/v1/memories", {}, {"user_id": USER, "content": "an intruder's fact"}),
    ("POST", "/v1/memories/batch", {}, {"items": [{"user_id": USER, "content": "an intruder's fact"}]}),
    ("GET", "/v1/memories", {"user_id": USER}, None),
    ("POST", "/v1/recall", {}, {"user_id": USER, "query": "code editor"}),
    ("POST", "/v1/forget", {}, {"user_id": USER, "query": EDITOR}),
    ("GET", "/v1/stats", {"user_id": USER}, None),
    ("GET", "/v1/users", {}, None),
    ("GET", "/v1/projects", {"user_id": USER}, None),
    ("GET", "/v1/usage/series", {"since": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z"}, None),
    *[r for r in ID_ROUTES if r[1] != "/v1/forget"],
]


def route_id(route: tuple[str, str, dict[str, Any], Any]) -> str:
    method, path, params, _ = route
    return f"{method} {path}" + "".join(f"?{k}={v}" for k, v in params.items())


def fill(value: Any, memory_id: str) -> Any:
    if isinstance(value, str):
        return value.replace("{id}", memory_id)
    if isinstance(value, dict):
        return {k: fill(v, memory_id) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, memory_id) for v in value]
    return value


async def send(
    client: AsyncTestClient[Any],
    route: tuple[str, str, dict[str, Any], Any],
    memory_id: str,
    headers: dict[str, str],
) -> httpx.Response:
    method, path, params, body = route
    return await client.request(
        method, fill(path, memory_id), params=params, json=fill(body, memory_id), headers=headers
    )


async def seed(api: Api) -> list[dict[str, Any]]:
    """Tenant A's data for the shared user: a slotted fact and a pinned one."""
    editor = await api.remember(user_id=USER, content=EDITOR, type="preference", subject="code editor")
    deadline = await api.remember(user_id=USER, content=DEADLINE, pinned=True)
    return [editor["memory"], deadline["memory"]]


async def snapshot(api: Api, memories: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything A can observe about its own data; must be identical before and after B acts."""
    got = {}
    for m in memories:
        response = await api.get(f"/v1/memories/{m['id']}")
        assert response.status_code == 200, response.text
        history = (await api.get(f"/v1/memories/{m['id']}/history")).json()
        got[m["id"]] = (response.json(), len(history["events"]))
    listing = (await api.get("/v1/memories", user_id=USER)).json()
    stats = (await api.get("/v1/stats", user_id=USER)).json()
    return {"memories": got, "listing": listing, "stats": stats}


@pytest.mark.parametrize("route", ID_ROUTES, ids=route_id)
async def test_other_tenant_gets_404_for_foreign_memory_on_every_id_route(
    api: Api, other_api: Api, route: tuple[str, str, dict[str, Any], Any]
) -> None:
    memories = await seed(api)
    before = await snapshot(api, memories)
    for memory in memories:
        foreign = await send(other_api.client, route, memory["id"], other_api.headers)
        assert foreign.status_code == 404, foreign.text
        assert foreign.json()["error"] == "not_found"
        # Indistinguishable from an id that exists nowhere: existence is not leaked.
        unknown_id = str(uuid.uuid4())
        unknown = await send(other_api.client, route, unknown_id, other_api.headers)
        assert unknown.status_code == 404, unknown.text
        assert unknown.json() == {
            "error": "not_found",
            "detail": foreign.json()["detail"].replace(memory["id"], unknown_id),
        }
    assert await snapshot(api, memories) == before
    assert before["memories"][memories[0]["id"]][0]["status"] == "active"
    assert before["memories"][memories[1]["id"]][0]["status"] == "pinned"


async def test_other_tenant_sees_nothing_of_the_same_user_id(api: Api, other_api: Api) -> None:
    memories = await seed(api)
    own = (await api.get("/v1/memories", user_id=USER, limit=1)).json()
    assert own["next_cursor"] is not None  # A has a second page; its cursor must not help B
    before = await snapshot(api, memories)

    for params in ({}, {"status": "active"}, {"subject": "code editor"}, {"q": "Neovim"}):
        listing = await other_api.get("/v1/memories", user_id=USER, **params)
        assert listing.status_code == 200, listing.text
        assert listing.json() == {"items": [], "next_cursor": None}
    paged = await other_api.get("/v1/memories", user_id=USER, cursor=own["next_cursor"])
    assert paged.status_code == 200, paged.text
    assert paged.json()["items"] == []

    for params in ({"user_id": USER}, {}):
        stats = await other_api.get("/v1/stats", **params)
        assert stats.status_code == 200, stats.text
        body = stats.json()
        assert (body["total"], body["by_status"], body["by_type"], body["mismatched"]) == (0, {}, {}, 0)

    recall = await other_api.recall(user_id=USER, query="Which code editor do I prefer?")
    assert recall["context"] == ""
    assert recall["memories"] == []
    assert recall["tokens_used"] == 0
    assert recall["trace"]["candidates"] == 0

    assert await snapshot(api, memories) == before
    # Sanity: the same recall through A's own key does find the memory (so B's empty answer means something).
    mine = await api.recall(user_id=USER, query="Which code editor do I prefer?")
    assert memories[0]["id"] in [m["memory"]["id"] for m in mine["memories"]]


@pytest.mark.parametrize(
    "selector",
    [
        {"query": EDITOR},
        {"subject": "code editor"},
        {"filter": {"type": "preference"}},
        {"filter": {"older_than_days": 0}},
        {"filter": {"salience_below": 1.0}},
    ],
    ids=["query", "subject", "filter-type", "filter-age", "filter-salience"],
)
async def test_forget_by_other_tenant_forgets_nothing_of_ours(
    api: Api, other_api: Api, selector: dict[str, Any]
) -> None:
    memories = await seed(api)
    before = await snapshot(api, memories)
    response = await other_api.post("/v1/forget", {"user_id": USER, **selector})
    assert response.status_code == 200, response.text
    assert response.json() == {"forgotten": []}
    assert await snapshot(api, memories) == before
    assert before["stats"]["by_status"] == {"active": 1, "pinned": 1}


async def test_other_tenant_writes_for_the_same_user_never_touch_ours(api: Api, other_api: Api) -> None:
    memories = await seed(api)
    before = await snapshot(api, memories)
    # Same content and slot: neither a duplicate of nor a successor to A's memory.
    same = await other_api.remember(user_id=USER, content=EDITOR, type="preference", subject="code editor")
    assert (same["action"], same["superseded"]) == ("created", [])
    newer = await other_api.remember(
        user_id=USER,
        content="I switched to Helix as my code editor",
        type="preference",
        subject="code editor",
    )
    assert newer["superseded"] == [same["memory"]["id"]]
    batch = await other_api.post("/v1/memories/batch", {"items": [{"user_id": USER, "content": DEADLINE}]})
    assert batch.status_code == 201, batch.text
    assert batch.json()["results"][0]["action"] == "created"

    assert await snapshot(api, memories) == before
    mine = await api.recall(user_id=USER, query="Which code editor do I prefer?")
    assert "Helix" not in mine["context"]
    assert "Neovim" in mine["context"]


async def revoked_key(owner_engine: AsyncEngine) -> str:
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        created = await admin.create_tenant(session, f"t-{uuid.uuid4().hex[:12]}")
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        assert await admin.revoke_key(session, str(created.key_id)) == 1
    return created.plaintext


BAD_CREDENTIALS = ["none", "basic-scheme", "bearer-without-token", "unknown-key", "tampered-key", "revoked"]


async def bad_headers(kind: str, api: Api, owner_engine: AsyncEngine) -> dict[str, str]:
    if kind == "none":
        return {}
    if kind == "revoked":
        return {"Authorization": f"Bearer {await revoked_key(owner_engine)}"}
    value = {
        "basic-scheme": f"Basic {api.key}",
        "bearer-without-token": "Bearer ",
        "unknown-key": "Bearer egm_00000000_thiskeywasneverissued",
        "tampered-key": f"Bearer {api.key[:-1]}{'A' if api.key[-1] != 'A' else 'B'}",
    }[kind]
    return {"Authorization": value}


@pytest.mark.parametrize("kind", BAD_CREDENTIALS)
@pytest.mark.parametrize("route", ALL_ROUTES, ids=route_id)
async def test_every_v1_route_refuses_bad_credentials_with_401(
    api: Api, owner_engine: AsyncEngine, route: tuple[str, str, dict[str, Any], Any], kind: str
) -> None:
    [memory, _] = await seed(api)
    response = await send(api.client, route, memory["id"], await bad_headers(kind, api, owner_engine))
    assert response.status_code == 401, response.text
    body = response.json()
    assert body["error"] == "unauthorized"
    assert set(body) == {"error", "detail"}
    assert isinstance(body["detail"], str)
    assert body["detail"]


async def test_revoked_key_worked_before_revocation_and_not_after(
    api: Api, owner_engine: AsyncEngine
) -> None:
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        created = await admin.create_tenant(session, f"t-{uuid.uuid4().hex[:12]}")
    headers = {"Authorization": f"Bearer {created.plaintext}"}
    assert (await api.client.get("/v1/stats", headers=headers)).status_code == 200
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        await admin.revoke_key(session, str(created.key_id))
    response = await api.client.get("/v1/stats", headers=headers)
    assert response.status_code == 401, response.text
    assert response.json()["error"] == "unauthorized"


async def test_requests_refused_for_credentials_change_nothing(api: Api) -> None:
    memories = await seed(api)
    before = await snapshot(api, memories)
    for route in ALL_ROUTES:
        response = await send(api.client, route, memories[0]["id"], {"Authorization": "Bearer egm_nope_x"})
        assert response.status_code == 401, (route_id(route), response.text)
    assert await snapshot(api, memories) == before
