"""Engine creation and the per-transaction tenant context for row-level security."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from app.db.urls import to_async_url
from app.tenancy.types import TenantId

SET_TENANT = text("SELECT set_config('app.tenant_id', :tenant_id, true)")


def create_engine(
    url: str, *, pool_size: int = 10, max_overflow: int = 10, pre_ping: bool = True
) -> AsyncEngine:
    """An asyncpg engine with a health-checked pool (a dead pooled connection is replaced, not reused)."""
    return create_async_engine(
        to_async_url(url),
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_pre_ping=pre_ping,
        pool_recycle=1800,
    )


async def set_tenant(session: AsyncSession, tenant: TenantId) -> None:
    """Bind the current transaction to `tenant`; RLS policies read it (SET LOCAL takes no parameters)."""
    await session.execute(SET_TENANT, {"tenant_id": str(tenant)})
