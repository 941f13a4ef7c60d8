"""Access counts: how often, and when last, recall handed a memory back (salience decays from the last
access), kept in the narrow `memory_access` table, never in the memory's row.

Reinforcement off the request path: recalls note what they packed, a background task writes it.

Recall reinforces what it hands back (an access count and the last access time: salience decays from
the last access). Written inside every recall, that made a read a write on the latency path, under row
locks. Here a recall only notes its ids in memory; every `interval_s` one statement per tenant adds the
accumulated accesses to the memories' narrow `memory_access` rows (migration 0008). Recall stays
read-only; a burst of recalls of the same memories becomes one row update.

Best effort by design, as reinforcement always was: rows another transaction holds are skipped
(`AccessStore.add`), a flush that would still wait on a lock longer than `LOCK_TIMEOUT`
gives up (a writer is never held up by it), and a crash loses at most one interval of access counts (a
graceful shutdown flushes). Nothing a client wrote is ever held here.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.session import set_tenant
from app.lib.logging import get_logger
from app.lib.periodic import PeriodicTask
from app.tenancy.types import TenantId


@dataclass(frozen=True, slots=True)
class Access:
    """Accesses of one memory: how many, and the last one."""

    count: int
    last: datetime | None


# Adds accesses (:ids, :ns, :ats) to the memories' `memory_access` rows. Rows another transaction holds
# are skipped, never waited for: an access row, or for a first access the memory's row (a writer
# replacing it; locked FOR KEY SHARE, which the foreign key check takes anyway). Only a first access
# touches `memories` at all: locking a row writes its page.
_ACCESS_UPSERT = text(
    """WITH p AS (
           SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:ns AS int[]), CAST(:ats AS timestamptz[]))
                         AS p(id, n, at)
       ), held AS (
           SELECT a.memory_id, p.n, p.at FROM memory_access a JOIN p ON p.id = a.memory_id
           WHERE a.tenant_id = :tenant
           ORDER BY a.memory_id FOR UPDATE OF a SKIP LOCKED
       ), bumped AS (
           UPDATE memory_access a
           SET access_count = a.access_count + held.n,
               last_accessed_at = greatest(a.last_accessed_at, held.at)
           FROM held WHERE a.tenant_id = :tenant AND a.memory_id = held.memory_id
           RETURNING a.memory_id, a.access_count, a.last_accessed_at
       ), fresh AS (
           SELECT m.id FROM memories m
           WHERE m.tenant_id = :tenant AND m.id = ANY(CAST(:ids AS uuid[]))
             AND NOT EXISTS (SELECT FROM memory_access a WHERE a.tenant_id = :tenant AND a.memory_id = m.id)
           ORDER BY m.id FOR KEY SHARE OF m SKIP LOCKED
       ), added AS (
           INSERT INTO memory_access (tenant_id, memory_id, access_count, last_accessed_at)
           SELECT :tenant, p.id, p.n, p.at FROM p JOIN fresh ON fresh.id = p.id
           ORDER BY p.id
           ON CONFLICT DO NOTHING
           RETURNING memory_id, access_count, last_accessed_at
       )
       SELECT * FROM bumped UNION ALL SELECT * FROM added"""
)


class AccessStore:
    """One tenant's access counts."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def add(self, accesses: Mapping[uuid.UUID, Access]) -> dict[uuid.UUID, Access]:
        """Add each memory's accesses to its `memory_access` row; returns the rows as they now stand.

        Best effort by design: a memory that no longer exists, whose access row another transaction
        holds, or (on its first access) that a writer holds for update, is skipped, so reinforcement
        neither waits nor deadlocks; its access count then misses an increment, which is all
        reinforcement is. The one wait left is on another transaction inserting the same memory's
        first access row (the background batches bound it with a lock timeout). Rows are locked in id
        order.
        """
        if not accesses:
            return {}
        ids = sorted(accesses)
        params = {
            "tenant": self.tenant,
            "ids": ids,
            "ns": [accesses[i].count for i in ids],
            "ats": [accesses[i].last for i in ids],
        }
        rows = await self.session.execute(_ACCESS_UPSERT, params)
        return {row.memory_id: Access(row.access_count, row.last_accessed_at) for row in rows}

    async def once(self, ids: Sequence[uuid.UUID], now: datetime) -> None:
        """One access at `now` for every memory that made it into a context (one statement)."""
        await self.add({memory_id: Access(1, now) for memory_id in ids})


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
                    updated += len(await AccessStore(session, tenant).add(accesses))
            except SQLAlchemyError as exc:  # the database may be briefly away, or a lock held: lost
                log.warning("reinforcement_failed", error_type=type(exc).__name__, memories=len(accesses))
        return updated

    def start(self) -> None:
        self._task.start()

    async def stop(self) -> None:
        """Stop the loop; its last run flushes whatever is still pending."""
        await self._task.stop()
        await self.flush()
