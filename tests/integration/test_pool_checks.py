"""The request pool replaces dead connections at checkout, and pings only connections idle a while."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import pytest
from sqlalchemy import make_url, text
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
        async with engine.connect() as conn:
            pid = int((await conn.execute(PID)).scalar_one())
            driver = (await conn.get_raw_connection()).driver_connection
        async with owner_engine.connect() as owner:
            assert (await owner.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})).scalar_one()
        # Wait until the driver has read the close. The pid leaving pg_stat_activity is not that: a
        # terminated backend clears its entry before it closes its socket (CI once checked out in between,
        # when the driver had read the FATAL message but not the close).
        for _ in range(500):
            if driver.is_closed():
                break
            await asyncio.sleep(0.01)
        assert driver.is_closed()
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


class SilentPeer:
    """A loopback TCP proxy to the test database that can cut a connection the moment the client next
    writes, as a network partition does: until then the client has seen nothing close."""

    def __init__(self, url: str) -> None:
        self.url = make_url(url)
        self.cut_next_write = False
        self.cuts = 0

    async def _upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host = self.url.query.get("host") or self.url.host or "localhost"
        port = self.url.port or 5432
        if isinstance(host, str) and host.startswith("/"):  # a Unix socket directory
            return await asyncio.open_unix_connection(f"{host}/.s.PGSQL.{port}")
        return await asyncio.open_connection(host, port)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await self._upstream()

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, from_client: bool) -> None:
            with suppress(ConnectionError):
                while data := await source.read(65536):
                    if from_client and self.cut_next_write:
                        self.cut_next_write, self.cuts = False, self.cuts + 1
                        break
                    sink.write(data)
                    await sink.drain()
            for w in (writer, up_writer):
                w.close()

        await asyncio.gather(pump(reader, up_writer, True), pump(up_reader, writer, False))

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """The database URL through the proxy."""
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        query = {k: v for k, v in self.url.query.items() if k != "host"}
        try:
            yield self.url.set(host="127.0.0.1", port=port, query=query).render_as_string(hide_password=False)
        finally:
            server.close()


async def test_a_connection_whose_peer_vanished_is_found_by_the_ping_and_replaced(
    database: TestDatabase,
) -> None:
    peer = SilentPeer(database.app_url)
    async with peer.serving() as url:
        engine = create_engine(url, pool_size=1, max_overflow=0, pre_ping=False)
        check_on_checkout(engine, 0.0)  # every reuse is pinged
        try:
            pid = await backend_pid(engine)
            peer.cut_next_write = True  # the pooled connection looks open to the driver...
            # ...until the ping's write: it fails, the pool replaces the connection, the request is served.
            assert await backend_pid(engine) != pid
            assert peer.cuts == 1
        finally:
            await engine.dispose()
