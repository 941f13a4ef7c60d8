"""Migration 0008 moves access counts out of `memories` into `memory_access` without losing one, and its
downgrade moves them back. Run on a scratch database of the test server, migrated step by step."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.session import create_engine
from tests.support.migrations import migrate

BEFORE = "0007_content_tokens"
TENANT = uuid.UUID("8c1f0e52-3b0a-4c55-9d1e-2f6a7b8c9d01")
USED, UNUSED = uuid.uuid4(), uuid.uuid4()
WHEN = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


async def in_tenant(engine: AsyncEngine) -> AsyncConnection:
    conn = await engine.connect()
    await conn.begin()
    await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(TENANT)})
    return conn


async def test_access_counts_move_to_their_own_table_and_back(scratch: str) -> None:
    await migrate(scratch, "upgrade", BEFORE)
    engine = create_engine(scratch, pool_size=1, max_overflow=0)
    try:
        conn = await in_tenant(engine)
        await conn.execute(text("INSERT INTO tenants (id, name) VALUES (:t, 'migrated')"), {"t": TENANT})
        for memory_id, count, last in ((USED, 5, WHEN), (UNUSED, 0, None)):
            await conn.execute(
                text(
                    "INSERT INTO memories (tenant_id, id, user_id, type, content, status, importance,"
                    " salience, confidence, privacy, source, content_hash, access_count, last_accessed_at)"
                    " VALUES (:t, :id, 'u', 'fact', :c, 'active', 0.5, 1, 0.8, 'public', 'api', :h,"
                    " :n, :last)"
                ),
                {
                    "t": TENANT,
                    "id": memory_id,
                    "c": f"memory {memory_id}",
                    "h": memory_id.hex,
                    "n": count,
                    "last": last,
                },
            )
        await conn.commit()
        await conn.close()

        await migrate(scratch, "upgrade", "head")
        conn = await in_tenant(engine)
        moved = (await conn.execute(text("SELECT * FROM memory_access"))).mappings().all()
        columns = (
            await conn.execute(
                text("SELECT column_name FROM information_schema.columns WHERE table_name = 'memories'")
            )
        ).scalars()
        await conn.close()
        assert [dict(r) for r in moved] == [
            {"tenant_id": TENANT, "memory_id": USED, "access_count": 5, "last_accessed_at": WHEN}
        ]
        assert {"access_count", "last_accessed_at"}.isdisjoint(set(columns))

        await migrate(scratch, "downgrade", BEFORE)
        conn = await in_tenant(engine)
        back = (
            await conn.execute(
                text("SELECT id, access_count, last_accessed_at FROM memories ORDER BY content")
            )
        ).all()
        table = (await conn.execute(text("SELECT to_regclass('memory_access')"))).scalar_one()
        await conn.close()
        assert sorted(back) == sorted([(USED, 5, WHEN), (UNUSED, 0, None)])
        assert table is None
    finally:
        await engine.dispose()
