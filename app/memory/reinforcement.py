"""Reinforcement off the request path: recalls note what they packed, a background task writes it.

Recall reinforces what it hands back (an access count and the last access time: salience decays from
the last access). Written inside every recall, that made a read a write on the latency path, under row
locks. Here a recall only notes its ids in memory; every `interval_s` one statement per tenant adds the
accumulated accesses to the memories' narrow `memory_access` rows (migration 0008). Recall stays
read-only; a burst of recalls of the same memories becomes one row update.

Best effort by design, as reinforcement always was: rows another transaction holds are skipped
(`MemoryRepository.record_access`), a flush that would still wait on a lock longer than `LOCK_TIMEOUT`
gives up (a writer is never held up by it), and a crash loses at most one interval of access counts (a
graceful shutdown flushes). Nothing a client wrote is ever held here.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import set_tenant
from app.lib.logging import get_logger
from app.lib.periodic import PeriodicTask
from app.memory.repository import Access, MemoryRepository
from app.tenancy.types import TenantId

log = get_logger("engram.reinforcement")

# Past this, a flush gives up its tenant's batch rather than hold up whoever holds the lock.
LOCK_TIMEOUT = "200ms"
_LOCK_TIMEOUT = text("SELECT set_config('lock_timeout', :timeout, true)")


class Reinforcements:
    """Accumulated accesses per tenant and memory, applied in batches."""

    def __init__(self, engine: AsyncEngine, interval_s: float) -> None:
        self._maker = async_sessionmaker(engine)
        self._pending: dict[TenantId, dict[uuid.UUID, Access]] = defaultdict(dict)
        self._task = PeriodicTask(self.flush, interval_s, name="reinforcement")

    def note(self, tenant: TenantId, ids: Sequence[uuid.UUID], at: datetime) -> None:
        """Record that a recall of `tenant` packed `ids` at `at` (no I/O)."""
        pending = self._pending[tenant]
        for memory_id in ids:
            seen = pending.get(memory_id)
            last = at if seen is None or seen.last is None else max(seen.last, at)
            pending[memory_id] = Access(1 if seen is None else seen.count + 1, last)

    @property
    def pending(self) -> int:
        return sum(len(ids) for ids in self._pending.values())

    async def flush(self) -> int:
        """Apply everything noted so far; returns the rows updated. One transaction per tenant."""
        batch, self._pending = self._pending, defaultdict(dict)
        updated = 0
        for tenant, accesses in batch.items():
            try:
                async with self._maker() as session, session.begin():
                    await set_tenant(session, tenant)
                    await session.execute(_LOCK_TIMEOUT, {"timeout": LOCK_TIMEOUT})
                    updated += len(await MemoryRepository(session, tenant).record_access(accesses))
            except SQLAlchemyError as exc:  # the database may be briefly away, or a lock held: lost
                log.warning("reinforcement_failed", error_type=type(exc).__name__, memories=len(accesses))
        return updated

    def start(self) -> None:
        self._task.start()

    async def stop(self) -> None:
        """Stop the loop; its last run flushes whatever is still pending."""
        await self._task.stop()
        await self.flush()
