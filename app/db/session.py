"""Engine creation and the per-transaction tenant context for row-level security."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from app.db.urls import to_async_url
from app.tenancy.types import TenantId

SET_TENANT = text("SELECT set_config('app.tenant_id', :tenant_id, true)")

# A pooled connection used less than this long ago is not pinged at checkout (HikariCP's "alive bypass
# window" is the same idea, 0.5 s there). The ping is three round trips with asyncpg (BEGIN, ";",
# ROLLBACK: 0.25 ms of every request here); under load every connection is back within milliseconds.
PING_AFTER_IDLE_S = 1.0

_RETURNED = "engram.returned_at"


def create_engine(
    url: str, *, pool_size: int = 10, max_overflow: int = 10, pre_ping: bool = True
) -> AsyncEngine:
    """An asyncpg engine with a health-checked pool (a dead pooled connection is replaced, not reused)."""
    engine = create_async_engine(
        to_async_url(url),
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        hide_parameters=True,  # an error's message never quotes parameters (memory content, user ids)
    )
    if pre_ping:
        check_on_checkout(engine, PING_AFTER_IDLE_S)
    return engine


def check_on_checkout(engine: AsyncEngine, ping_after_idle_s: float) -> None:
    """Replace a dead pooled connection at checkout instead of failing the request that gets it.

    A connection the server closed (a restart, `pg_terminate_backend`) is known to the driver as soon as
    the event loop has read the close, so that check costs nothing and runs every time. A connection
    whose peer vanished without a word (a network partition) is only found by a round trip, which is
    sent when the connection has been idle for `ping_after_idle_s`. Either failure invalidates every
    connection older than it, as SQLAlchemy's own pre-ping does.
    """
    dialect = engine.dialect
    pool = engine.sync_engine.pool

    @event.listens_for(pool, "checkin")
    def _returned(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info[_RETURNED] = time.monotonic()

    @event.listens_for(pool, "checkout")
    def _check(dbapi_connection: Any, record: ConnectionPoolEntry, proxy: PoolProxiedConnection) -> None:
        if dbapi_connection.driver_connection.is_closed():
            raise InvalidatePoolError("the server closed this connection")
        returned = record.info.get(_RETURNED)
        if returned is None or time.monotonic() - returned < ping_after_idle_s:
            return  # new, or in use a moment ago
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                raise InvalidatePoolError("the ping found this connection dead") from exc
            raise


async def set_tenant(session: AsyncSession, tenant: TenantId) -> None:
    """Bind the current transaction to `tenant`; RLS policies read it (SET LOCAL takes no parameters)."""
    await session.execute(SET_TENANT, {"tenant_id": str(tenant)})
