"""Reinforcement off the request path: recalls note what they packed, a background task writes it.

Recall reinforces what it hands back (access_count, last_accessed_at: salience decays from the last
access). Writing that inside every recall made a read an UPDATE of ~2.5 kB rows: row versions, WAL,
and sometimes a new HNSW entry, on the latency path and under row locks. Here a recall only notes its
ids in memory; every `interval_s` one UPDATE per tenant applies the accumulated counts. Recall stays
read-only; a burst of recalls of the same memories becomes one row update.

Best effort by design, as reinforcement always was: rows another transaction holds are skipped, and a
crash loses at most one interval of access counts (a graceful shutdown flushes). Nothing a client
wrote is ever held here.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import set_tenant
from app.lib.logging import get_logger
from app.lib.periodic import PeriodicTask
from app.tenancy.types import TenantId

log = get_logger("engram.reinforcement")

_APPLY = text(
    """UPDATE memories m
       SET access_count = m.access_count + u.n,
           last_accessed_at = greatest(coalesce(m.last_accessed_at, u.at), u.at)
       FROM (SELECT pending.id, pending.n, pending.at
             FROM unnest(CAST(:ids AS uuid[]), CAST(:ns AS int[]), CAST(:ats AS timestamptz[]))
                  AS pending(id, n, at)
             JOIN memories locked ON locked.tenant_id = :tenant AND locked.id = pending.id
             ORDER BY pending.id
             FOR UPDATE OF locked SKIP LOCKED) u
       WHERE m.tenant_id = :tenant AND m.id = u.id"""
)


@dataclass(slots=True)
class _Pending:
    count: int
    last: datetime


class Reinforcements:
    """Accumulated accesses per tenant and memory, applied in batches."""

    def __init__(self, engine: AsyncEngine, interval_s: float) -> None:
        self._maker = async_sessionmaker(engine)
        self._pending: dict[TenantId, dict[uuid.UUID, _Pending]] = defaultdict(dict)
        self._task = PeriodicTask(self.flush, interval_s, name="reinforcement")

    def note(self, tenant: TenantId, ids: Sequence[uuid.UUID], at: datetime) -> None:
        """Record that a recall of `tenant` packed `ids` at `at` (no I/O)."""
        pending = self._pending[tenant]
        for memory_id in ids:
            seen = pending.get(memory_id)
            if seen is None:
                pending[memory_id] = _Pending(1, at)
            else:
                seen.count += 1
                seen.last = max(seen.last, at)

    @property
    def pending(self) -> int:
        return sum(len(ids) for ids in self._pending.values())

    async def flush(self) -> int:
        """Apply everything noted so far; returns the rows updated. One transaction per tenant."""
        batch, self._pending = self._pending, defaultdict(dict)
        updated = 0
        for tenant, accesses in batch.items():
            ids = sorted(accesses)
            params = {
                "tenant": tenant,
                "ids": ids,
                "ns": [accesses[i].count for i in ids],
                "ats": [accesses[i].last for i in ids],
            }
            try:
                async with self._maker() as session, session.begin():
                    await set_tenant(session, tenant)
                    result = await session.execute(_APPLY, params)
                    updated += result.rowcount  # type: ignore[attr-defined]
            except SQLAlchemyError as exc:  # the database may be briefly away: these accesses are lost
                log.warning("reinforcement_failed", error_type=type(exc).__name__, memories=len(ids))
        return updated

    def start(self) -> None:
        self._task.start()

    async def stop(self) -> None:
        """Stop the loop; its last run flushes whatever is still pending."""
        await self._task.stop()
        await self.flush()
