"""Erase is verifiable: after erasing a user, a project or one memory, no text column of any table (found
through information_schema) holds the erased content, the receipt counts exactly what was there, and
what was only forgotten (or belongs to someone else) keeps its audit trail."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.conftest import Api
from tests.support.scan import scan_text_columns

ERIN = "erin-7f3a9c"
FRANK = "frank-2b8d41"
TABLES = {
    "memories": "memories",
    "messages": "messages",
    "events": "memory_events",
    "proposals": "dream_proposals",
    "usage_events": "usage_events",
}


async def counts(
    engine: AsyncEngine, tenant: uuid.UUID, user: str, project: str | None = None
) -> dict[str, int]:
    """What the database holds for a user (or a project of theirs), per receipt field."""
    out: dict[str, int] = {}
    async with engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        for name, table in TABLES.items():
            where = "tenant_id = :t AND user_id = :u"
            if project is not None:
                if table == "usage_events":
                    out[name] = 0  # usage rows carry no project
                    continue
                where += " AND project_id = :p"
            sql = text(f"SELECT count(*) FROM {table} WHERE {where}")
            out[name] = int((await conn.execute(sql, {"t": tenant, "u": user, "p": project})).scalar_one())
    return out


async def chat(api: Api, user: str, message: str, **extra: Any) -> dict[str, Any]:
    response = await api.post("/v1/chat", {"user_id": user, "message": message, "session_id": "s1", **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def seed_user(api: Api, user: str, word: str) -> dict[str, str]:
    """Memories in every state, a proposal, a chat turn with usage, for `user`; `word` marks their text."""
    ids: dict[str, str] = {}
    reply = await chat(api, user, f"I prefer {word} tea in the morning")
    assert [c["name"] for c in reply["tool_calls"]] == ["remember"], reply
    ids["old"] = (await api.remember(user_id=user, content=f"Office in {word}ville", subject="office"))[
        "memory"
    ]["id"]
    await api.remember(user_id=user, content=f"Office moved to {word}burg", subject="office", summary=word)
    ids["forgotten"] = (await api.remember(user_id=user, content=f"Ex-partner named {word}ina"))["memory"][
        "id"
    ]
    forgotten = await api.post("/v1/forget", {"user_id": user, "memory_id": ids["forgotten"]})
    assert forgotten.status_code == 200
    await api.remember(
        user_id=user, content=f"Always encrypt {word} backups", type="critical_rule", subject="backup policy"
    )
    proposal = await api.remember(
        user_id=user, content=f"Skip {word} backups", type="critical_rule", subject="backup policy"
    )
    assert proposal["proposals"]
    await api.remember(user_id=user, content=f"Project {word}-moon uses Rust", project_id="moon", tags=[word])
    await chat(api, user, f"I prefer {word} maps for the moon project", project_id="moon")
    return ids


async def test_erasing_a_user_leaves_nothing_in_any_text_column_and_the_receipt_counts_it(
    api: Api, owner_engine: AsyncEngine
) -> None:
    await seed_user(api, ERIN, "Quokkazz")
    frank_ids = await seed_user(api, FRANK, "Wombatyy")
    expected = await counts(owner_engine, api.tenant_id, ERIN)
    assert all(expected[k] > 0 for k in TABLES), expected  # every kind of row is really there
    frank_before = await counts(owner_engine, api.tenant_id, FRANK)
    frank_trail = (await api.get(f"/v1/memories/{frank_ids['forgotten']}/history")).json()["events"]

    response = await api.post(f"/v1/users/{ERIN}/erase")
    assert response.status_code == 200, response.text
    assert response.json() == {"user_id": ERIN, "project_id": None, **expected}

    scan = await scan_text_columns(owner_engine, api.tenant_id, ["quokkazz", ERIN])
    assert scan.hits == []
    assert {
        "memories.content",
        "messages.content",
        "memory_events.details",
        "dream_proposals.payload",
    } <= set(scan.columns)
    assert scan.rows["memories"] > 0  # the scan really read rows (Frank's)
    assert await counts(owner_engine, api.tenant_id, ERIN) == dict.fromkeys(TABLES, 0)
    assert await counts(owner_engine, api.tenant_id, FRANK) == frank_before
    # Forgotten (not erased) keeps its audit trail.
    assert (await api.get(f"/v1/memories/{frank_ids['forgotten']}/history")).json()["events"] == frank_trail
    assert (await api.recall(user_id=ERIN, query="tea office backups"))["memories"] == []


async def test_erasing_a_project_keeps_the_users_global_memories(api: Api, owner_engine: AsyncEngine) -> None:
    await seed_user(api, ERIN, "Quokkazz")
    expected = await counts(owner_engine, api.tenant_id, ERIN, project="moon")
    assert expected["memories"] >= 2
    assert expected["messages"] >= 1
    global_before = (await api.get("/v1/memories", user_id=ERIN, limit=500)).json()["items"]
    kept = [m for m in global_before if m["project_id"] is None]

    response = await api.post(f"/v1/users/{ERIN}/erase", {"project_id": "moon"})
    assert response.status_code == 200, response.text
    receipt = response.json()
    assert receipt == {"user_id": ERIN, "project_id": "moon", **expected}

    scan = await scan_text_columns(owner_engine, api.tenant_id, ["quokkazz-moon", "quokkazz maps"])
    assert scan.hits == []
    after = (await api.get("/v1/memories", user_id=ERIN, limit=500)).json()["items"]
    assert sorted(m["id"] for m in after) == sorted(m["id"] for m in kept)
    assert await counts(owner_engine, api.tenant_id, ERIN, project="moon") == dict.fromkeys(TABLES, 0)


async def test_erasing_one_memory_removes_its_text_and_source_turn_and_keeps_a_bare_trail(
    api: Api, owner_engine: AsyncEngine
) -> None:
    ids = await seed_user(api, ERIN, "Quokkazz")
    from_chat = [
        m
        for m in (await api.get("/v1/memories", user_id=ERIN, limit=500)).json()["items"]
        if m["source_message_id"] and "morning" in m["content"]
    ]
    assert len(from_chat) == 1
    target = from_chat[0]
    asked = await chat(api, ERIN, "What tea do I like?")  # the answer quotes the memory
    assert "Quokkazz tea" in asked["answer"]
    events_before = (await api.get(f"/v1/memories/{target['id']}/history")).json()["events"]
    forgotten_trail = (await api.get(f"/v1/memories/{ids['forgotten']}/history")).json()["events"]

    response = await api.delete(f"/v1/memories/{target['id']}", erase="true")
    assert response.status_code == 200, response.text
    receipt = response.json()
    assert receipt == {
        "user_id": ERIN,
        "project_id": None,
        "memories": 1,
        "messages": 3,  # the turn it came from, the reply stored with it, the later answer quoting it
        "events": len(events_before),
        "proposals": 0,
        "usage_events": 0,
    }
    scan = await scan_text_columns(owner_engine, api.tenant_id, ["quokkazz tea"])
    assert scan.hits == []
    assert (await api.get(f"/v1/memories/{target['id']}")).status_code == 404
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        trail = (
            await conn.execute(
                text(
                    "SELECT kind, reason, details::text FROM memory_events WHERE memory_id = :m ORDER BY id"
                ),
                {"m": uuid.UUID(target["id"])},
            )
        ).all()
    assert [row.kind for row in trail] == [e["kind"] for e in reversed(events_before)] + ["erased"]
    assert all(row.details == "{}" for row in trail)
    assert all(row.reason is None for row in trail[:-1])
    assert (await api.get(f"/v1/memories/{ids['forgotten']}/history")).json()["events"] == forgotten_trail
    remaining = await counts(owner_engine, api.tenant_id, ERIN)
    assert remaining["messages"] > 0  # the user's other turns ("What tea do I like?", the moon chat) stay


async def test_erasing_a_memory_that_a_proposal_names_removes_the_proposal(api: Api) -> None:
    await api.remember(user_id=ERIN, content="Always sign commits", type="critical_rule", subject="commits")
    proposed = await api.remember(
        user_id=ERIN, content="Signing is optional", type="critical_rule", subject="commits"
    )
    receipt = (await api.delete(f"/v1/memories/{proposed['memory']['id']}", erase="true")).json()
    assert receipt["proposals"] == 1
    document = (await api.get("/v1/export", user_id=ERIN)).json()
    assert document["proposals"] == []
    assert "optional" not in str(document)


async def test_another_tenant_erasing_the_same_user_id_removes_nothing_here(
    api: Api, other_api: Api, owner_engine: AsyncEngine
) -> None:
    await seed_user(api, ERIN, "Quokkazz")
    before = await counts(owner_engine, api.tenant_id, ERIN)
    response = await other_api.post(f"/v1/users/{ERIN}/erase", {})
    assert response.status_code == 200
    assert response.json() == {"user_id": ERIN, "project_id": None, **dict.fromkeys(TABLES, 0)}
    assert await counts(owner_engine, api.tenant_id, ERIN) == before


async def test_erasing_a_user_with_more_rows_than_a_statement_has_parameters(
    api: Api, owner_engine: AsyncEngine
) -> None:
    """asyncpg takes at most 32,767 parameters per statement: ids travel as one array, not a list."""
    rows = 33_000
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        await conn.execute(
            text(
                "INSERT INTO memories (tenant_id, id, user_id, type, content, status, importance, salience,"
                " confidence, privacy, source, content_hash, superseded_by)"
                " SELECT :t, gen_random_uuid(), :u, 'fact', 'bulk fact ' || i, 'superseded', 0.5, 1, 0.8,"
                " 'public', 'api', md5(i::text) || md5(i::text), gen_random_uuid()"
                " FROM generate_series(1, :n) i"
            ),
            {"t": api.tenant_id, "u": ERIN, "n": rows},
        )
    response = await api.post(f"/v1/users/{ERIN}/erase", {})
    assert response.status_code == 200, response.text
    assert response.json()["memories"] == rows
    assert (await counts(owner_engine, api.tenant_id, ERIN))["memories"] == 0


async def test_a_user_id_with_a_slash_is_erased_through_the_body_route(
    api: Api, owner_engine: AsyncEngine
) -> None:
    await api.remember(user_id="org/erin", content="Quokkazz lives behind a slash")
    await api.remember(user_id="org/erin", content="Quokkazz project note", project_id="moon")
    assert (await api.post("/v1/erase", {"user_id": "org/erin", "project_id": "moon"})).json()[
        "memories"
    ] == 1
    response = await api.post("/v1/erase", {"user_id": "org/erin"})
    assert response.status_code == 200, response.text
    assert response.json()["memories"] == 1
    assert (await scan_text_columns(owner_engine, api.tenant_id, ["quokkazz"])).hits == []
    for body in ({}, {"user_id": ""}, {"user_id": "u", "colour": 1}):
        assert (await api.post("/v1/erase", body)).status_code == 422


async def access_rows(engine: AsyncEngine, tenant: uuid.UUID, memory_ids: list[str]) -> int:
    async with engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        sql = text("SELECT count(*) FROM memory_access WHERE tenant_id = :t AND memory_id::text = ANY(:m)")
        return int((await conn.execute(sql, {"t": tenant, "m": memory_ids})).scalar_one())


async def test_erasing_takes_the_access_counts_with_the_memories(api: Api, owner_engine: AsyncEngine) -> None:
    one = (await api.remember(user_id=ERIN, content="Erin's locker code is on the card"))["memory"]["id"]
    other = (await api.remember(user_id=ERIN, content="Erin parks on level 3"))["memory"]["id"]
    for content in ("Erin's locker code is on the card", "Erin parks on level 3"):
        await api.remember(user_id=ERIN, content=content)  # the same again: counted as an access
    assert await access_rows(owner_engine, api.tenant_id, [one, other]) == 2

    assert (await api.delete(f"/v1/memories/{one}", erase="true")).status_code == 200
    assert await access_rows(owner_engine, api.tenant_id, [one, other]) == 1
    assert (await api.post(f"/v1/users/{ERIN}/erase")).status_code == 200
    assert await access_rows(owner_engine, api.tenant_id, [one, other]) == 0
