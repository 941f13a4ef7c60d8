"""Migrations 0014-0015: `terms_version` takes a value no row had before on every insert and every change
to what a memory's terms derive from (its content, its subject, its passages) and on nothing else, so an
update that was HOT stays HOT; the migrations go down and up again on a database that has rows."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import create_engine, set_tenant
from app.tenancy.types import TenantId
from tests.conftest import Api
from tests.support.migrations import migrate


async def _updated(engine: AsyncEngine, tenant: TenantId, memory: str, change: str) -> int:
    """The memory's `terms_version` after `change` (a SET list) is committed by its own transaction."""
    async with async_sessionmaker(engine)() as session, session.begin():
        await set_tenant(session, tenant)
        if change:
            await session.execute(text(f"UPDATE memories SET {change} WHERE id = :id"), {"id": memory})
        version = await session.execute(
            text("SELECT terms_version FROM memories WHERE id = :id"), {"id": memory}
        )
        return int(version.scalar_one())


async def test_only_changes_to_the_terms_move_the_version_on(api: Api, app_engine: AsyncEngine) -> None:
    """Each change of the content or subject gives the row a version no row had before; other updates
    leave it."""
    tenant = TenantId(api.tenant_id)
    memory = (await api.remember(user_id="u", content="The zeppelin hangar opens at dawn"))["memory"]["id"]
    seen = [await _updated(app_engine, tenant, memory, "")]
    assert await _updated(app_engine, tenant, memory, "importance = 0.9, tags = '{a}'") == seen[-1]
    assert await _updated(app_engine, tenant, memory, "content = content") == seen[-1]  # the same words
    for change in (
        "content = 'The hangar opens at nine'",
        "subject = 'hangar'",
        "subject = NULL, content = 'Closed'",
    ):
        seen.append(await _updated(app_engine, tenant, memory, change))
        assert seen[-1] > max(seen[:-1])
    # Through the API: an edit of the content is a change of the terms.
    await api.patch(f"/v1/memories/{memory}", {"content": "The hangar opens at ten"})
    assert await _updated(app_engine, tenant, memory, "") > seen[-1]
    other = (await api.remember(user_id="u", content="Breakfast is served at seven"))["memory"]["id"]
    assert await _updated(app_engine, tenant, other, "") not in seen  # a new row: a version of its own


async def test_the_migration_goes_down_and_up_with_rows_in_place(scratch: str) -> None:
    await migrate(scratch, "upgrade", "head")
    engine = create_engine(scratch, pool_size=1, max_overflow=0)
    tenant, memory = uuid.uuid4(), uuid.uuid4()
    try:
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO tenants (id, name) VALUES (:t, 'migrated')"), {"t": tenant})
            await conn.execute(
                text(
                    "INSERT INTO memories (tenant_id, id, user_id, type, content, status, importance, salience,"
                    " confidence, privacy, source, content_hash) VALUES (:t, :m, 'u', 'fact', 'old', 'active',"
                    " 0.5, 0.5, 1, 'private', 'api', 'h')"
                ),
                {"t": tenant, "m": memory},
            )
        await migrate(scratch, "downgrade", "0013_session_neighbours")
        await migrate(scratch, "upgrade", "head")
        async with engine.begin() as conn:
            select = text("SELECT terms_version FROM memories WHERE id = :m")
            before = (await conn.execute(select, {"m": memory})).scalar_one()
            await conn.execute(text("UPDATE memories SET content = 'new' WHERE id = :m"), {"m": memory})
            assert (await conn.execute(select, {"m": memory})).scalar_one() > before
    finally:
        await engine.dispose()
