"""Whole-table snapshots through the owner connection, for "nothing changed" assertions."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine


async def table_rows(owner_engine: AsyncEngine, table: str, tenant_id: uuid.UUID) -> list[str]:
    """Every row of `table` as JSON text, in key order (every column, vectors and tsvectors included).

    The tenant is set for the transaction, so this also works where FORCE RLS applies to the owner;
    on a superuser connection RLS is bypassed and the snapshot covers the whole table.
    """
    order = {"memory_access": "tenant_id, memory_id"}.get(table, "tenant_id, id")
    assert table in {"memories", "memory_access", "memory_events", "dream_proposals"}
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant_id)})
        rows = await conn.execute(text(f"SELECT to_jsonb(t)::text FROM {table} t ORDER BY {order}"))
        return [r[0] for r in rows]


async def tenant_name(owner_engine: AsyncEngine, tenant_id: uuid.UUID) -> str:
    async with owner_engine.connect() as conn:
        name = await conn.scalar(text("SELECT name FROM tenants WHERE id = :id"), {"id": tenant_id})
    assert isinstance(name, str)
    return name
