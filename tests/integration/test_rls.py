"""The second wall: PostgreSQL row-level security on the service's own role."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.conftest import Api

TENANT_TABLES = (
    "memories",
    "memory_access",
    "memory_passages",
    "memory_events",
    "dream_proposals",
    "api_keys",
    "tenants",
    "messages",
    "usage_events",
)


async def test_service_role_is_neither_superuser_nor_owner_nor_rls_exempt(app_engine: AsyncEngine) -> None:
    async with app_engine.connect() as conn:
        role = (
            await conn.execute(
                text(
                    "SELECT current_user AS name, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
                )
            )
        ).one()
        owners = (
            (
                await conn.execute(
                    text("SELECT DISTINCT tableowner FROM pg_tables WHERE tablename = ANY(:t)"),
                    {"t": list(TENANT_TABLES)},
                )
            )
            .scalars()
            .all()
        )
    assert role.name == "engram_app"
    assert role.rolsuper is False
    assert role.rolbypassrls is False
    assert "engram_app" not in owners


@pytest.mark.parametrize("table", TENANT_TABLES)
async def test_service_role_without_tenant_context_sees_zero_rows(
    table: str, api: Api, app_engine: AsyncEngine
) -> None:
    await populate(api)
    async with app_engine.connect() as conn:
        count = (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()
    async with app_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        bound = (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()
    assert (count, bound > 0) == (0, True)  # the rows are there, for the tenant that is set


async def populate(api: Api) -> None:
    """A row of the tenant in every tenant table."""
    await api.remember(user_id="u", content="RLS probe memory", subject="probe", type="fact")
    await api.remember(user_id="u", content="RLS probe memory", subject="probe", type="fact")  # an access
    await api.remember(user_id="u", content="Timezone is CET", subject="timezone", pinned=True)
    long = " ".join(
        f"Paragraph {i} of the runbook says to check the disk before the deploy." for i in range(30)
    )
    await api.remember(user_id="u", content=long)  # long enough for passages
    assert (await api.remember(user_id="u", content="Timezone is PST", subject="timezone"))["proposals"]
    chat = await api.post("/v1/chat", {"user_id": "u", "message": "I prefer green tea", "session_id": "s"})
    assert chat.status_code == 200, chat.text


async def test_service_role_sees_only_the_tenant_set_in_its_transaction(
    api: Api, other_api: Api, app_engine: AsyncEngine
) -> None:
    await api.remember(user_id="u", content="tenant A memory")
    await other_api.remember(user_id="u", content="tenant B memory")
    async with app_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        contents = (await conn.execute(text("SELECT content FROM memories"))).scalars().all()
        tenants = (await conn.execute(text("SELECT count(*) FROM tenants"))).scalar_one()
    assert contents == ["tenant A memory"]
    assert tenants == 1


async def test_service_role_cannot_write_a_row_for_another_tenant(
    api: Api, other_api: Api, app_engine: AsyncEngine
) -> None:
    async with app_engine.connect() as conn:
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        with pytest.raises(Exception, match="row-level security"):
            await conn.execute(
                text(
                    "INSERT INTO memories (tenant_id, id, user_id, type, content, status, importance, salience,"
                    " confidence, privacy, source, content_hash)"
                    " VALUES (:t, gen_random_uuid(), 'u', 'fact', 'x', 'active', 0.5, 1, 0.5, 'public', 'api', 'h')"
                ),
                {"t": str(other_api.tenant_id)},
            )
        await conn.rollback()
