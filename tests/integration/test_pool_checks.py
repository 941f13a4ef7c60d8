"""The request pool replaces dead connections at checkout, and pings only connections idle a while."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.session import check_on_checkout, create_engine
from tests.support.database import TestDatabase

PID = text("SELECT pg_backend_pid()")


async def backend_pid(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(PID)).scalar_one())


async def test_a_connection_the_server_closed_is_replaced_at_checkout(
    database: TestDatabase, owner_engine: AsyncEngine
) -> None:
    engine = create_engine(database.app_url, pool_size=1, max_overflow=0)
    try:
        pid = await backend_pid(engine)
        async with owner_engine.connect() as owner:
            assert (await owner.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})).scalar_one()
            for _ in range(100):  # until the server has closed it (each round trip lets the loop read)
                gone = text("SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = :p)")
                if (await owner.execute(gone, {"p": pid})).scalar_one():
                    break
                await asyncio.sleep(0.01)
        # The pool holds its one connection, the one the server closed: the request gets a new one.
        assert await backend_pid(engine) != pid
    finally:
        await engine.dispose()


@pytest.mark.parametrize(("idle_s", "pings"), [(3600.0, 0), (0.0, 2)])
async def test_a_pooled_connection_is_pinged_only_after_idling(
    database: TestDatabase, monkeypatch: pytest.MonkeyPatch, idle_s: float, pings: int
) -> None:
    engine = create_engine(database.app_url, pool_size=1, max_overflow=0, pre_ping=False)
    check_on_checkout(engine, idle_s)
    calls: list[Any] = []
    ping = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        calls.append(dbapi_connection)
        return ping(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    try:
        pids = {await backend_pid(engine) for _ in range(3)}  # a new connection, then reused twice
        assert len(calls) == pings
        assert len(pids) == 1  # the ping found it alive: the same connection served every checkout
    finally:
        await engine.dispose()
