"""Spare reads for tests: counted (`CountingSpare`), and held until released (`HeldSpare`), so a test can
see a read still running whatever the machine's speed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.db.session import create_engine
from app.db.spare import SpareReads, checked_out
from app.tenancy.types import TenantId

T = TypeVar("T")


class CountingSpare(SpareReads):
    """Spare reads that count the reads they took on."""

    def __init__(self, url: str, connections: int, beside: AsyncEngine | None = None) -> None:
        engine = create_engine(url, pool_size=connections, max_overflow=0)
        super().__init__(engine, connections, None if beside is None else checked_out(beside))
        self.started = 0

    def start(
        self, tenant: TenantId, read: Callable[[AsyncSession], Awaitable[T]]
    ) -> asyncio.Task[T | None] | None:
        task = super().start(tenant, read)
        self.started += task is not None
        return task


class HeldSpare(CountingSpare):
    """Counted spare reads that begin only once `released` is set."""

    def __init__(self, url: str, connections: int) -> None:
        super().__init__(url, connections)
        self.released = asyncio.Event()

    def start(
        self, tenant: TenantId, read: Callable[[AsyncSession], Awaitable[T]]
    ) -> asyncio.Task[T | None] | None:
        async def held(session: AsyncSession) -> T:
            await self.released.wait()
            return await read(session)

        return super().start(tenant, held)
