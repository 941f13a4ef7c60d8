"""Which candidate plan keeps cosine ranking exact and fast for a scope (DESIGN.md, read path step 2).

An exact scan of a scope's rows is exact by construction, and with the vectors stored in the row it
costs about half a microsecond per row here (100k rows: ~50 ms on 2 cores). HNSW is faster for large
scopes but approximate: on hash vectors, whose distances between unrelated texts are nearly equal, a
filtered HNSW walk over a 100k-row scope found only 46% of the true top-50 at ef_search 100 and 83% at
1000 (bench/perf). So recall scans exactly up to `exact_scan_max_rows` and uses HNSW only past it, and
only when the scope is a sizeable share of the index: with a tiny share the graph walk passes over
thousands of other tenants' vectors and can stop before it finds the scope's nearest ones.

Counting a large scope is itself a scan, so counts of large scopes are remembered for a minute per
process; small scopes are counted on every call (the count stops at the scope's size). The same holds for
the text statistics BM25 reads (N and the mean tsvector length, `text_stats`): a large scope's can be a
minute old, which moves an idf by a fraction of a percent; a small scope's are exact.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from app.store.bm25 import TextStats
from app.store.candidates import RecallStore
from app.vocabulary import Scope


@dataclass(frozen=True, slots=True)
class PlanInput:
    scope_rows: int  # live rows in scope, counted up to exact_max + 1
    table_rows: float  # the planner's estimate of all rows (pg_class.reltuples; -1 when never analysed)
    exact_max: int
    min_share: float


def use_hnsw(p: PlanInput) -> bool:
    """True when the per-model HNSW index should answer instead of an exact scan."""
    if p.scope_rows <= p.exact_max:
        return False
    if p.table_rows <= 0:
        return True  # unknown table size: the scope alone is large
    return p.scope_rows / max(p.table_rows, p.scope_rows) >= p.min_share


class ScopeSizes:
    """Per-process memory of large scopes' live-row counts (a plan hint, never a correctness input)."""

    def __init__(self, *, remember_from: int = 1_000, ttl_seconds: float = 60.0, capacity: int = 10_000):
        self.remember_from, self.ttl, self.capacity = remember_from, ttl_seconds, capacity
        self._sizes: dict[tuple[object, ...], tuple[float, int, float]] = {}
        self._stats: dict[tuple[object, ...], tuple[float, TextStats]] = {}

    async def plan(
        self, store: RecallStore, scope: Scope, now: datetime, exact_max: int, min_share: float
    ) -> tuple[bool, int]:
        """(whether HNSW should answer, live rows counted). The count stops past `exact_max`, or past the
        share of the table when that is larger, so both tests of `use_hnsw` see a true figure (1M rows, a
        60k-row scope counted to 5,001 looked like 0.5% of the table and got the exact scan, 3x slower)."""
        size, table = await self.size(store, scope, now, exact_max + 1)
        if size > exact_max and table * min_share > size:
            size, table = await self.size(store, scope, now, int(table * min_share) + 1)
        return use_hnsw(PlanInput(size, table, exact_max, min_share)), size

    async def plan_with_stats(
        self, store: RecallStore, scope: Scope, now: datetime, exact_max: int, min_share: float
    ) -> tuple[bool, int, TextStats]:
        """`plan` and BM25's `text_stats` of a present recall, in one statement where one will do: the
        statistics count the same live rows as the plan's count, so a scope they show within
        `exact_max` is scanned exactly without a count of its own (a round trip of every small recall);
        a larger one is counted as `plan` counts it, for its share of the table."""
        stats = await self.text_stats(store, scope, now)
        if stats.rows <= exact_max:
            return False, stats.rows, stats
        use_index, size = await self.plan(store, scope, now, exact_max, min_share)
        return use_index, size, stats

    async def size(self, store: RecallStore, scope: Scope, now: datetime, cap: int) -> tuple[int, float]:
        """(live rows in scope counted up to `cap`, the table's estimated rows), counted or remembered."""
        key = (*_identity(scope), cap)
        known = self._sizes.get(key)
        if known is not None and time.monotonic() - known[0] < self.ttl:
            return known[1], known[2]
        rows, table = await store.scope_size(scope, now, cap)
        if rows >= self.remember_from:
            if len(self._sizes) >= self.capacity:
                self._sizes.clear()
            self._sizes[key] = (time.monotonic(), rows, table)
        return rows, table

    async def text_stats(self, store: RecallStore, scope: Scope, now: datetime) -> TextStats:
        """BM25's scope statistics, counted or (scopes of `remember_from` rows and more) remembered."""
        key = _identity(scope)
        known = self._stats.get(key)
        if known is not None and time.monotonic() - known[0] < self.ttl:
            return known[1]
        stats = await store.text_stats(scope, now)
        if stats.rows >= self.remember_from:
            if len(self._stats) >= self.capacity:
                self._stats.clear()
            self._stats[key] = (time.monotonic(), stats)
        return stats


def _identity(scope: Scope) -> tuple[object, ...]:
    """What a remembered count is about: an agent's view (its own, its spaces') is a scope of its own."""
    return (str(scope.tenant), scope.user_id, scope.project_id, scope.reach, scope.agent_id, scope.shared)


SCOPE_SIZES = ScopeSizes()
