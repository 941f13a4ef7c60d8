"""The per-process memory of large scopes' sizes: a plan hint that must never go stale for small scopes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.context import RequestContext
from app.db.session import set_tenant
from app.embeddings.hashing import HashEmbedder
from app.lib.clock import SystemClock
from app.lib.settings import Settings
from app.memory.service import MemoryService
from app.store.candidates import RecallStore
from app.store.plan import ScopeSizes
from app.tenancy.types import TenantId
from app.vocabulary import Reach, Scope
from tests.conftest import Api


async def _size(engine: AsyncEngine, sizes: ScopeSizes, tenant: TenantId, user: str) -> int:
    async with async_sessionmaker(engine)() as session, session.begin():
        await set_tenant(session, tenant)
        store = RecallStore(session, tenant)
        rows, _ = await sizes.size(
            store, Scope(tenant, user, None, Reach.WITH_GLOBAL), datetime.now(UTC), 100
        )
    return rows


async def test_large_scopes_are_remembered_and_small_ones_counted_every_time(
    api: Api, app_engine: AsyncEngine
) -> None:
    tenant = TenantId(api.tenant_id)
    sizes = ScopeSizes(remember_from=3, ttl_seconds=3600)
    for fact in ("The build runs on Fridays", "The cat is called Miso", "Our VPN is WireGuard"):
        await api.remember(user_id="large", content=fact)
    await api.remember(user_id="small", content="Lunch is at noon")

    assert await _size(app_engine, sizes, tenant, "large") == 3
    assert await _size(app_engine, sizes, tenant, "small") == 1
    await api.remember(user_id="large", content="The office plant is a fern")
    await api.remember(user_id="small", content="The printer is on floor two")

    assert await _size(app_engine, sizes, tenant, "large") == 3  # remembered
    assert await _size(app_engine, sizes, tenant, "small") == 2  # counted again


async def test_remembered_sizes_expire(api: Api, app_engine: AsyncEngine) -> None:
    tenant = TenantId(api.tenant_id)
    sizes = ScopeSizes(remember_from=1, ttl_seconds=0.0)
    await api.remember(user_id="u", content="The build runs on Fridays")
    assert await _size(app_engine, sizes, tenant, "u") == 1
    await api.remember(user_id="u", content="The cat is called Miso")
    assert await _size(app_engine, sizes, tenant, "u") == 2


async def test_remembered_sizes_are_per_tenant(api: Api, other_api: Api, app_engine: AsyncEngine) -> None:
    sizes = ScopeSizes(remember_from=1, ttl_seconds=3600)
    await api.remember(user_id="u", content="The build runs on Fridays")
    await api.remember(user_id="u", content="The cat is called Miso")
    assert await _size(app_engine, sizes, TenantId(api.tenant_id), "u") == 2
    assert await _size(app_engine, sizes, TenantId(other_api.tenant_id), "u") == 0


async def test_forget_by_query_counts_the_statistics_afresh_and_leaves_none_remembered(
    api: Api, app_engine: AsyncEngine
) -> None:
    """A forget is rare and must read the scope as it is: its count never becomes the remembered one."""
    tenant = TenantId(api.tenant_id)
    sizes = ScopeSizes(remember_from=1, ttl_seconds=3600)  # every scope counts as large
    for fact in ("The build runs on Fridays", "The cat is called Miso"):
        await api.remember(user_id="u", content=fact)
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        ctx = replace(
            RequestContext.build(
                session, tenant, "test", embedder=HashEmbedder(), settings=Settings(), clock=SystemClock()
            ),
            scope_sizes=sizes,
        )
        assert await MemoryService(ctx).forget("u", query="the zeppelin timetable") == []
    await api.remember(user_id="u", content="Our VPN is WireGuard")

    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        scope = Scope(tenant, "u", None, Reach.WITH_GLOBAL)
        stats = await sizes.text_stats(RecallStore(session, tenant), scope, datetime.now(UTC))
    assert stats.rows == 3  # counted now, not the two the forget saw
