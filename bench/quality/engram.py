"""Engram through its real service code: in-process `MemoryService`, real PostgreSQL (the embedded
throwaway server of bench.common unless BENCH_DATABASE_URL is set), one tenant per run, one user per
conversation (and per embedder and mode), each transaction bound to the tenant as a request's is.

Ingestion replays the conversation: `remember_many` in batches of up to 500 units of one calendar day,
with the clock set to the batch's last turn (so temporary facts expire and deadlines resolve as they
would have live) and `observed_at` = the turn's time (so a memory's `valid_from` is when it was said).
Each memory carries its source turn in `tags` (`turn:<id>`); a unit that was deduplicated onto an
existing memory adds its turn to that memory's turns. Extracted mode applies the extractor's forget
requests before the facts of the same call, as `POST /v1/memories/extract` does.

After each conversation's ingestion the store's tables are analyzed (`EngramStore.settle`), as
autovacuum would have done before a real user asks. Questions are asked one day after the
conversation's last turn. Each recall runs in its own transaction that is rolled back, and its
reinforcement is noted as the service's default notes it (batched, `ENGRAM_REINFORCE_INTERVAL_S` > 0: off
the request path, so the latency measured is the request's) but never flushed: one question's
reinforcement must not move the next question's ranking (questions are independent samples, not a
session).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.context import RequestContext
from app.db.session import create_engine, set_tenant
from app.lib.errors import ValidationFailed
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.memory.models import RecallInput, RecallResult, RememberInput
from app.memory.packing import SkipReason
from app.memory.recall import MAX_BUDGET
from app.memory.service import MemoryService
from app.store.access import Reinforcements
from app.tenancy import admin
from app.tenancy.types import TenantId
from app.vocabulary import MemoryType, Source
from bench.quality.embedding import CachedEmbedder
from bench.quality.units import Forget, Unit

BATCH = 500


class MutableClock:
    """The service's clock, moved by the replay."""

    def __init__(self, now: datetime) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def set(self, value: datetime) -> None:
        self._now = value


class EngramStore:
    """The database side of the run: a tenant and a pool of connections as the service role."""

    def __init__(self, owner_url: str, app_url: str) -> None:
        self.owner_url, self.app_url = owner_url, app_url
        self.tenant: TenantId | None = None

    async def open(self, name: str) -> None:
        owner = create_engine(self.owner_url, pool_size=1, max_overflow=0)
        async with async_sessionmaker(owner)() as session, session.begin():
            created = await admin.create_tenant(session, f"quality-{name}-{uuid.uuid4().hex[:8]}")
        await owner.dispose()
        self.tenant = created.tenant_id
        self.engine = create_engine(self.app_url, pool_size=2, max_overflow=0)
        self.maker = async_sessionmaker(self.engine, expire_on_commit=False)

    async def close(self) -> None:
        await self.engine.dispose()

    async def settle(self) -> None:
        """ANALYZE the tables a conversation's ingestion grew, as autovacuum does within a minute of such
        a write in a running service (migration 0006 lowers its threshold for `memories`). Without it
        every question of the run is planned on the statistics of the empty tables the migrations
        indexed (no rows), a state a service is in only for its first minute."""
        owner = create_engine(self.owner_url, pool_size=1, max_overflow=0)
        try:
            async with owner.connect() as conn:
                await conn.execute(text("ANALYZE memories, memory_passages, memory_access"))
                await conn.commit()
        finally:
            await owner.dispose()

    @asynccontextmanager
    async def transaction(self, *, commit: bool) -> AsyncIterator[AsyncSession]:
        assert self.tenant is not None
        async with self.maker() as session:
            trans = await session.begin()
            try:
                await set_tenant(session, self.tenant)
                yield session
            except BaseException:
                await trans.rollback()
                raise
            if commit:
                await trans.commit()
            else:
                await trans.rollback()


@dataclass(frozen=True, slots=True)
class _Included:
    id: uuid.UUID
    score: float
    turns: list[str]
    whole: bool = True  # shown whole, not as one of its passages


@dataclass(frozen=True, slots=True)
class Signal:
    """One candidate of a recall without floor or budget: its turns and its relevance's parts."""

    standing: bool  # a constraint, critical rule or pinned memory (enters below the floor)
    turns: list[str]
    cosine: float
    coverage: float
    bm25: float

    @classmethod
    def of(cls, standing: bool, turns: list[str], components: dict[str, float]) -> Signal:
        return cls(
            standing,
            turns,
            components.get("cosine", 0.0),
            components.get("coverage", 0.0),
            components["bm25"],
        )


@dataclass(slots=True)
class Recalled:
    turn_ids: list[str]  # turns of the context's memories, in context order
    context: str
    tokens: int
    latency_ms: float  # the service's own measure (embed + SQL + score + pack + noting reinforcement)
    whole_ids: list[str]  # turns of the memories shown whole (not as a passage), one per memory


class EngramSystem:
    """One embedder's Engram: ingests conversations and answers recalls."""

    def __init__(
        self, store: EngramStore, embedder: CachedEmbedder, settings: Settings | None = None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings or Settings(
            embedder=embedder.label if embedder.label != "openai" else "openai"
        )
        self.clock = MutableClock(datetime.now().astimezone())
        self.counter = TokenCounter()
        self.turns_of: dict[uuid.UUID, list[str]] = defaultdict(list)
        self.always: set[uuid.UUID] = set()
        self.standing: set[uuid.UUID] = set()  # enter below the floor within the standing share
        self.actions: Counter[str] = Counter()
        # The service's batches, never started nor flushed (see the module's docstring).
        self.reinforcements: Reinforcements | None = None

    def service(self, session: AsyncSession) -> MemoryService:
        assert self.store.tenant is not None
        ctx = RequestContext.build(
            session,
            self.store.tenant,
            "bench",
            embedder=self.embedder,
            settings=self.settings,
            clock=self.clock,
            counter=self.counter,
            reinforcements=self.reinforcements,
        )
        return MemoryService(ctx)

    # -- ingestion ---------------------------------------------------------------------------------
    async def ingest(
        self,
        user_id: str,
        calls: Sequence[Sequence[Unit]],
        forgets: Sequence[Sequence[Forget]] | None = None,
        *,
        source: str = Source.IMPORT,
    ) -> None:
        batch: list[Unit] = []
        for index, units in enumerate(calls):
            removed = forgets[index] if forgets else []
            if removed:
                await self._write(user_id, batch, source)
                batch = []
                await self._forget(user_id, removed)
            for unit in units:
                if batch and (len(batch) >= BATCH or unit.at.date() != batch[0].at.date()):
                    await self._write(user_id, batch, source)
                    batch = []
                batch.append(unit)
        await self._write(user_id, batch, source)

    async def _write(self, user_id: str, units: list[Unit], source: str) -> None:
        if not units:
            return
        self.clock.set(max(u.at for u in units))
        items = [
            RememberInput(
                user_id=user_id,
                content=u.content,
                type=u.type,
                subject=u.subject,
                project_id=u.project,
                session_id=u.session_id,
                importance=u.importance,
                confidence=u.confidence,
                tags=[f"turn:{u.turn_id}"],
                observed_at=u.at,
                source=source,
            )
            for u in units
        ]
        async with self.store.transaction(commit=True) as session:
            results = await self.service(session).remember_many(items)
            for unit, result in zip(units, results, strict=True):
                memory = result.memory
                if unit.turn_id not in self.turns_of[memory.id]:
                    self.turns_of[memory.id].append(unit.turn_id)
                if memory.type == MemoryType.CRITICAL_RULE or memory.status == "pinned":
                    self.always.add(memory.id)
                if (
                    memory.type in (MemoryType.CRITICAL_RULE, MemoryType.CONSTRAINT)
                    or memory.status == "pinned"
                ):
                    self.standing.add(memory.id)
                self.actions[result.action] += 1
                self.actions["proposals"] += len(result.proposals)

    async def _forget(self, user_id: str, removed: Sequence[Forget]) -> None:
        for forget in removed:
            self.clock.set(forget.turn.at)
            async with self.store.transaction(commit=True) as session:
                service = self.service(session)
                found: list[uuid.UUID] = []
                if forget.subject:
                    try:
                        found = await service.forget(
                            user_id, project_id=forget.turn.project, subject=forget.subject, reason="bench"
                        )
                    except ValidationFailed:
                        found = []
                if not found:
                    found = await service.forget(
                        user_id, project_id=forget.turn.project, query=forget.query, reason="bench"
                    )
                self.actions["forgotten"] += len(found)

    # -- recall ---------------------------------------------------------------------------------------
    def _turns(self, memory_id: uuid.UUID, tags: Sequence[str] = ()) -> list[str]:
        from_tags = [t.removeprefix("turn:") for t in tags if t.startswith("turn:")]
        return list(dict.fromkeys([*from_tags, *self.turns_of.get(memory_id, [])]))

    async def _recall(self, request: RecallInput, at: datetime) -> tuple[RecallResult, list[_Included]]:
        self.clock.set(at)
        if self.reinforcements is None:
            self.reinforcements = Reinforcements(self.store.engine, interval_s=1.0)
        async with self.store.transaction(commit=False) as session:
            result = await self.service(session).recall(request)
            # Read everything needed before the rollback expires the loaded rows.
            included = [
                _Included(m.memory.id, m.score, self._turns(m.memory.id, m.memory.tags), m.passage is None)
                for m in result.memories
            ]
        return result, included

    async def recall(
        self, user_id: str, query: str, project: str | None, budget: int, at: datetime
    ) -> Recalled:
        request = RecallInput(user_id=user_id, query=query, project_id=project, token_budget=budget)
        result, included = await self._recall(request, at)
        ids = [t for m in included for t in m.turns]
        whole = [t for m in included if m.whole for t in m.turns]
        return Recalled(ids, result.context, result.tokens_used, result.latency_ms.get("total", 0.0), whole)

    async def ranking(
        self, user_id: str, query: str, project: str | None, at: datetime
    ) -> tuple[list[str], float, list[Signal]]:
        """Turn ids in the order of the memories' scores: unlimited budget, no relevance floor; and what
        each candidate's relevance is made of (bench.calibrate_floor)."""
        request = RecallInput(
            user_id=user_id, query=query, project_id=project, token_budget=MAX_BUDGET, min_relevance=0.0
        )
        started = time.perf_counter()
        result, included = await self._recall(request, at)
        signals = [
            Signal.of(m.id in self.standing, m.turns, components)
            for m, components in zip(included, (r.components for r in result.memories), strict=True)
        ]
        signals += [
            Signal.of(s.id in self.standing, self._turns(s.id), s.components)
            for s in result.skipped
            if s.reason == SkipReason.BUDGET
        ]
        ordered: list[tuple[bool, float, list[str]]] = [
            (m.id not in self.always, -m.score, m.turns) for m in included
        ]
        ordered += [
            (s.id not in self.always, -s.score, self._turns(s.id))
            for s in result.skipped
            if s.reason == SkipReason.BUDGET
        ]
        ordered.sort(key=lambda x: (x[0], x[1]))
        ids = [t for _, _, group in ordered for t in group]
        return ids, (time.perf_counter() - started) * 1000, signals
