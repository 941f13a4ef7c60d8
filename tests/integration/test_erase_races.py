"""A user erase racing writes to the same slot: every write is acknowledged (2xx) or refused as a
retryable conflict (409 in the API's shape), never a 500, and the store holds together afterwards.

The race: a write reads the slot's current memory under the slot's advisory lock, the erase (which
takes row locks, not that advisory lock) deletes it, and the write's UPDATE of that memory then
matches no row (SQLAlchemy's StaleDataError at flush). Its transaction is rolled back whole.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import Api, NewTenant
from tests.support.overlapping import served

USER = "racing-user"


@pytest.fixture
async def api(settings: Settings, new_tenant: NewTenant) -> AsyncIterator[Api]:
    """Over real HTTP: the in-process test client runs requests one at a time, so nothing would race."""
    tenant_id, key = await new_tenant()
    async with served(create_app(settings)) as client:
        yield Api(client, key, tenant_id)


ROUNDS = 6
WRITERS = 24


async def write(api: Api, round_: int, i: int) -> tuple[int, dict[str, Any]]:
    body = {"user_id": USER, "content": f"Round {round_}: the plant is watered by {i}", "subject": "plant"}
    response = await api.post("/v1/memories", body)
    return response.status_code, response.json()


async def erase(api: Api, delay: float) -> tuple[int, dict[str, Any]]:
    await asyncio.sleep(delay)  # let some writers read the slot's current row first
    response = await api.post(f"/v1/users/{USER}/erase", {})
    return response.status_code, response.json()


async def consistency(owner_engine: AsyncEngine, api: Api) -> dict[str, int]:
    """Live memories in the slot, and links or events that name a memory that does not exist."""
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        row = (
            await conn.execute(
                text(
                    """
                    SELECT
                      (SELECT count(*) FROM memories WHERE tenant_id = :t AND user_id = :u
                         AND subject = 'plant' AND status IN ('active', 'pinned')) AS live,
                      (SELECT count(*) FROM memories m WHERE m.tenant_id = :t AND (
                         (m.supersedes IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories o
                            WHERE o.tenant_id = m.tenant_id AND o.id = m.supersedes))
                         OR (m.superseded_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories o
                            WHERE o.tenant_id = m.tenant_id AND o.id = m.superseded_by)))) AS dangling,
                      (SELECT count(*) FROM memory_events e WHERE e.tenant_id = :t AND e.kind <> 'erased'
                         AND e.memory_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories o
                            WHERE o.tenant_id = e.tenant_id AND o.id = e.memory_id)) AS orphan_events
                    """
                ),
                {"t": api.tenant_id, "u": USER},
            )
        ).one()
    return {"live": row.live, "dangling": row.dangling, "orphan_events": row.orphan_events}


async def test_erasing_a_user_while_writes_hit_one_slot_never_fails_a_write_with_a_500(
    api: Api, owner_engine: AsyncEngine
) -> None:
    statuses: Counter[int] = Counter()
    for round_ in range(ROUNDS):
        results = await asyncio.gather(
            erase(api, 0.004 * round_), *(write(api, round_, i) for i in range(WRITERS))
        )
        erased, writes = results[0], results[1:]
        assert erased[0] == 200, erased
        for status, body in writes:
            statuses[status] += 1
            if status >= 500:
                continue
            assert status in (201, 409), (status, body)
            if status == 409:
                assert set(body) == {"error", "detail"}, body
                assert body["error"] == "conflict", body
                assert "retry" in body["detail"]
        state = await consistency(owner_engine, api)
        assert state["live"] <= 1, state  # what survived the erase is one current memory at most
        assert state["dangling"] == 0, state
        assert state["orphan_events"] == 0, state
    assert statuses[201] > 0
    assert [s for s in statuses if s >= 500] == [], statuses  # no 5xx of any kind, not only 500
    # Written after the race: the slot works as before, one current memory.
    assert (await write(api, ROUNDS, 0))[0] == 201
    assert (await consistency(owner_engine, api))["live"] == 1


async def waiting_on_locks(owner_engine: AsyncEngine) -> int:
    async with owner_engine.connect() as conn:
        count = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
        )
    return int(count or 0)


async def until_waiting(owner_engine: AsyncEngine, n: int) -> None:
    for _ in range(500):
        if await waiting_on_locks(owner_engine) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{n} statements never waited on a lock")


async def test_a_write_whose_slot_row_an_erase_deletes_under_it_is_a_retryable_409(
    api: Api, owner_engine: AsyncEngine
) -> None:
    """The interleaving forced: the erase has locked the slot's row and waits (on a proposal row this
    test holds) before deleting it; the write reads that row and waits to retire it; then the erase
    deletes it and commits, and the write's UPDATE matches nothing."""
    first = (await write(api, 0, 0))[1]["memory"]
    async with owner_engine.connect() as hold, hold.begin():
        await hold.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        await hold.execute(
            text(
                "INSERT INTO dream_proposals (tenant_id, id, user_id, kind, target_ids, payload, status) "
                "VALUES (:t, gen_random_uuid(), :u, 'forget', ARRAY[CAST(:m AS uuid)], '{}', 'proposed')"
            ),
            {"t": api.tenant_id, "u": USER, "m": first["id"]},
        )
        await hold.commit()
    async with owner_engine.connect() as hold, hold.begin():
        await hold.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        await hold.execute(
            text("SELECT 1 FROM dream_proposals WHERE tenant_id = :t AND user_id = :u FOR UPDATE"),
            {"t": api.tenant_id, "u": USER},
        )
        erasing = asyncio.create_task(erase(api, 0))
        await until_waiting(owner_engine, 1)  # the erase holds the memory's row, waits on the proposal
        writing = asyncio.create_task(write(api, 1, 1))
        await until_waiting(owner_engine, 2)  # the write read the row and waits to retire it
    erased, written = await asyncio.gather(erasing, writing)
    assert erased[0] == 200, erased
    assert written[0] == 409, written
    assert written[1]["error"] == "conflict"
    assert "retry" in written[1]["detail"]
    assert await consistency(owner_engine, api) == {"live": 0, "dangling": 0, "orphan_events": 0}
    assert (await write(api, 2, 2))[0] == 201  # the retry succeeds
