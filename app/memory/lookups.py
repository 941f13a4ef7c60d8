"""What one write asks the store, for one item or a batch alike.

Each question (a slot's current memory, the live memories with a content hash, the nearest live memory
of the same type) is asked once per scope for every item of the write, when the first item needs it,
in one statement; the write's own new memories are added to every answer (cosines with numpy). So a
batch decides exactly as the same items written one by one (tests/integration/test_batch_equivalence),
and a single remember asks no more than it needs. When an earlier item retired a row that was fetched
for a later one, the pending rows are flushed and that item's question is asked again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.context import RequestContext
from app.db.models import Memory
from app.memory.intake import Prepared
from app.memory.similarity import pair_similarity, statistics
from app.store.writes import NearestQuery, Neighbour
from app.vocabulary import LIVE_STATUSES, Scope

Hit = tuple[Memory, float]  # a memory and its cosine (or similarity) with the item
# The nearest memories by cosine among which the write path looks for the most similar one.
NEAR_K = 5


@dataclass(frozen=True, slots=True)
class Near:
    """An item's nearest live memory by cosine, and its most similar one (app.memory.similarity)."""

    nearest: Hit | None = None
    similar: Hit | None = None


def _live(memory: Memory) -> bool:
    return memory.status in LIVE_STATUSES


def _unit(vector: list[float]) -> npt.NDArray[np.float64]:
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


@dataclass(slots=True)
class _ScopeView:
    """The answers fetched for one scope (None: not asked yet), and the write's memories in it."""

    items: list[int]
    slots: dict[tuple[str, str], Memory] | None = None
    hashes: dict[str, list[Memory]] | None = None
    nearest: dict[int, list[Neighbour]] | None = None
    large: bool | None = None
    # The write's memories: their unit vectors and their items' indexes.
    written: list[tuple[Memory, npt.NDArray[np.float64], int]] = field(default_factory=list)


class WriteLookups:
    def __init__(self, ctx: RequestContext, prepared: list[Prepared], vectors: list[list[float]]) -> None:
        self.ctx, self.prepared, self.vectors = ctx, prepared, vectors
        self._views: dict[Scope, _ScopeView] = {}
        for index, p in enumerate(prepared):
            self._views.setdefault(p.scope, _ScopeView([])).items.append(index)
        self._loaded: dict[uuid.UUID, Memory] = {}
        self._lexemes: dict[int, dict[str, int]] = {}  # each item's, once its scope's nearest were asked

    def wrote(self, index: int, memory: Memory) -> None:
        """Item `index` was stored as `memory`: later items see it."""
        self._views[self.prepared[index].scope].written.append((memory, _unit(self.vectors[index]), index))
        self._loaded[memory.id] = memory

    async def memory(self, memory_id: uuid.UUID) -> Memory | None:
        return self._loaded.get(memory_id) or await self.ctx.store.reads.get(memory_id)

    def _keep(self, memories: list[Memory]) -> list[Memory]:
        self._loaded.update((m.id, m) for m in memories)
        return memories

    async def slot_current(self, index: int) -> Memory | None:
        """The newest live memory in item `index`'s slot."""
        p, view = self.prepared[index], self._views[self.prepared[index].scope]
        assert p.slot is not None
        writes = self.ctx.store.writes
        if view.slots is None:
            wanted = sorted({slot for i in view.items if (slot := self.prepared[i].slot) is not None})
            rows = self._keep(await writes.slot_currents(p.scope, wanted))
            view.slots = {(m.subject or "", m.type): m for m in rows}
        fetched = view.slots.get(p.slot)
        if fetched is not None and not _live(fetched):  # retired by an earlier item: ask again
            await self.ctx.store.flush()
            rows = self._keep(await writes.slot_currents(p.scope, [p.slot]))
            fetched = rows[0] if rows else None
        mine = [m for m, _, _ in view.written if _live(m) and (m.subject, m.type) == p.slot]
        found = [m for m in (fetched, *mine) if m is not None]
        return max(found, key=lambda m: m.valid_from) if found else None

    async def duplicate(self, index: int) -> Memory | None:
        """A live memory of the same type and content in item `index`'s scope."""
        p, view = self.prepared[index], self._views[self.prepared[index].scope]
        if view.hashes is None:
            digests = sorted({self.prepared[i].digest for i in view.items})
            view.hashes = {}
            for m in self._keep(await self.ctx.store.writes.live_with_hashes(p.scope, digests)):
                view.hashes.setdefault(m.content_hash, []).append(m)
        rows = [
            *view.hashes.get(p.digest, []),
            *(m for m, _, _ in view.written if m.content_hash == p.digest),
        ]
        return next((m for m in rows if _live(m) and m.type == p.item.type), None)

    async def nearest(self, index: int) -> Near:
        """The live memories of the same type nearest to item `index` (never one in another named slot):
        the nearest by cosine, and the most similar (app.memory.similarity) of its `NEAR_K` nearest, with
        the statistics of those and the item."""
        p, view = self.prepared[index], self._views[self.prepared[index].scope]
        if view.nearest is None:
            found = await self._nearest_of(p.scope, view, view.items)
            view.nearest = dict(zip(view.items, found, strict=True))
        fetched = view.nearest[index]
        if any(not _live(n.memory) for n in fetched):  # retired by an earlier item: ask again
            await self.ctx.store.flush()
            [fetched] = await self._nearest_of(p.scope, view, [index])
        item = _unit(self.vectors[index])
        mine = [
            Neighbour(memory, float(unit @ item), self._lexemes[written])
            for memory, unit, written in view.written
            if _live(memory)
            and memory.type == p.item.type
            and (p.subject is None or memory.subject in (None, p.subject))
        ]
        # The same k a write of these items one by one would have fetched (the written ones are stored).
        pool = sorted([*fetched, *mine], key=lambda n: -n.cosine)[:NEAR_K]
        if not pool:
            return Near()
        own = self._lexemes[index]
        dfs, stats = statistics([own, *(n.lexemes for n in pool)])
        policy = self.ctx.policy
        similar = [
            (
                n.memory,
                pair_similarity(n.cosine, own, n.lexemes, dfs, stats, k1=policy.bm25_k1, b=policy.bm25_b),
            )
            for n in pool
        ]
        return Near((pool[0].memory, pool[0].cosine), max(similar, key=lambda hit: hit[1]))

    async def _nearest_of(self, scope: Scope, view: _ScopeView, items: list[int]) -> list[list[Neighbour]]:
        ctx = self.ctx
        if view.large is None:  # whether the nearest-memory check uses HNSW for this scope
            settings = ctx.settings
            view.large, _ = await ctx.scope_sizes.plan(
                ctx.store.recall,
                scope,
                ctx.clock.now(),
                settings.write_exact_scan_max_rows,
                settings.hnsw_min_share,
            )
        queries = [
            NearestQuery(p.item.type, p.subject, self.vectors[i], f"{p.subject or ''} {p.content}")
            for i, p in ((i, self.prepared[i]) for i in items)
        ]
        found = await ctx.store.writes.nearest(
            scope,
            queries,
            ctx.embedder.name,
            index_dim=ctx.embedder.dim if view.large else None,
            ef_search=ctx.settings.hnsw_ef_search,
            k=NEAR_K,
        )
        self._keep([n.memory for nearby in found for n in nearby.neighbours])
        self._lexemes.update((i, nearby.lexemes) for i, nearby in zip(items, found, strict=True))
        return [nearby.neighbours for nearby in found]
