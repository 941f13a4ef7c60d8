"""Spare connections for reads that can run beside a request's own transaction.

Recall's two halves are independent scans of the same scope: the cosine half (the raw SQL floor) and
the text half (every scope row's words). In one statement PostgreSQL runs them one after the other, on
one core. On a large scope the text half runs here instead, in its own transaction on a connection of
this pool, while the request's connection runs the cosine half.

The pool is its own, never the request pool: a request holding its connection and waiting for a second
one from the same pool could wait on every other request doing the same. Here nothing waits for a
connection at all: `start` returns None when every spare connection is in use, and the caller runs the
read on its own connection as before. Spare reads are an optimisation, never a requirement.

They pay only while the machine has cores to spare. Under load every core is already busy with other
requests, and a second transaction per recall is extra work (on 2 cores at 16 clients, recall requests/s
fell from 77 to 61 with every recall reading apart), so `start` also declines while other requests hold
connections of the request pool (`requests_in_flight`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy import event
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, UOWTransaction
from sqlalchemy.pool import QueuePool

from app.db.session import create_engine, set_tenant
from app.lib.logging import get_logger
from app.tenancy.types import TenantId

T = TypeVar("T")

log = get_logger("engram.spare")

_WROTE = "engram.wrote"


@event.listens_for(Session, "after_flush")
def _note_write(session: Session, _flush: UOWTransaction) -> None:
    session.info[_WROTE] = True


@event.listens_for(Session, "after_commit")
@event.listens_for(Session, "after_rollback")
def _clear_write(session: Session) -> None:
    session.info.pop(_WROTE, None)


def sees_same_rows(session: AsyncSession) -> bool:
    """True when another transaction sees the same rows as `session`'s: it has written nothing yet
    (a spare connection cannot see uncommitted rows, so a read after a write must stay on `session`)."""
    return not (session.info.get(_WROTE) or session.new or session.dirty or session.deleted)


class SpareReads:
    """A small pool of tenant-bound read transactions, used only when a connection is free."""

    def __init__(
        self,
        engine: AsyncEngine,
        connections: int,
        requests_in_flight: Callable[[], int] | None = None,
        max_in_flight: int = 1,
    ) -> None:
        self.engine = engine
        self.connections = connections
        self._maker = async_sessionmaker(engine, expire_on_commit=False)
        self._busy = 0
        self._in_flight = requests_in_flight
        self._max_in_flight = max_in_flight

    @classmethod
    def connect(cls, url: str, connections: int, beside: AsyncEngine | None = None) -> SpareReads:
        """A spare pool for `url`; with `beside` (the request pool's engine), reads are started only while
        the caller's is the one request holding a connection of that pool."""
        # No pre-ping: a dead spare connection fails one read, which then runs on the request's own.
        engine = create_engine(url, pool_size=connections, max_overflow=0, pre_ping=False)
        return cls(engine, connections, None if beside is None else checked_out(beside))

    def start(
        self, tenant: TenantId, read: Callable[[AsyncSession], Awaitable[T]]
    ) -> asyncio.Task[T | None] | None:
        """Run `read` in its own transaction bound to `tenant`; None when no connection is free. The
        task's result is None when the read failed (logged): the caller then runs it itself."""
        if self._busy >= self.connections:
            return None
        if self._in_flight is not None and self._in_flight() > self._max_in_flight:
            return None  # other requests are running: their cores are not spare
        self._busy += 1  # no await since the check: no other task can take the same connection
        task = asyncio.create_task(self._run(tenant, read))
        task.add_done_callback(self._release)
        return task

    def _release(self, _task: asyncio.Task[T | None]) -> None:
        self._busy -= 1

    async def _run(self, tenant: TenantId, read: Callable[[AsyncSession], Awaitable[T]]) -> T | None:
        try:
            async with self._maker() as session, session.begin():
                await set_tenant(session, tenant)
                return await read(session)
        except (SQLAlchemyError, OSError) as exc:  # the caller reads on its own connection instead
            log.warning("spare_read_failed", error=type(exc).__name__)
            return None

    async def dispose(self) -> None:
        await self.engine.dispose()


def checked_out(engine: AsyncEngine) -> Callable[[], int]:
    """How many connections of `engine`'s pool are in use right now (0 for pools that do not say)."""
    pool = engine.sync_engine.pool
    if isinstance(pool, QueuePool):
        return pool.checkedout
    return lambda: 0
