"""Latency probes: the raw SQL floor, the service in-process, exactness against brute force."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
from pgvector.asyncpg import register_vector
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.context import RequestContext
from app.db.session import create_engine, set_tenant
from app.db.spare import SpareReads
from app.embeddings.hashing import HashEmbedder
from app.lib.clock import SystemClock
from app.lib.heap import tune_for_serving
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.memory.models import RecallInput, RememberInput
from app.memory.service import MemoryService
from app.store.access import Reinforcements
from app.store.candidates import CandidateQuery, RecallStore, or_tsquery
from app.store.plan import PlanInput, use_hnsw
from app.store.terms import TERM_INDEX
from app.tenancy.types import TenantId
from app.vocabulary import Reach, Scope
from bench.perf.data import Scope as DataScope

SCOPE = "tenant_id = $1 AND user_id = $2 AND status IN ('active', 'pinned') AND project_id IS NULL"
EXACT = f"SELECT id FROM memories WHERE {SCOPE} AND embed_model = $3 ORDER BY embedding <=> $4 LIMIT $5"


def hnsw_sql(model: str, dim: int) -> str:
    return (
        f"SELECT id FROM memories WHERE {SCOPE} AND embed_model = '{model}' "
        f"ORDER BY embedding::vector({dim}) <=> $3::vector({dim}) LIMIT $4"
    )


@dataclass
class Probe:
    scope: DataScope
    query: str


class Floor:
    """The same scoped top-k cosine query, sent directly with asyncpg as the service's role."""

    def __init__(self, conn: asyncpg.Connection, embedder: HashEmbedder, exact_max: int, k: int) -> None:
        self.conn, self.embedder, self.exact_max, self.k = conn, embedder, exact_max, k

    @classmethod
    async def connect(cls, dsn: str, embedder: HashEmbedder, exact_max: int, k: int) -> Floor:
        conn = await asyncpg.connect(dsn)
        await register_vector(conn)
        return cls(conn, embedder, exact_max, k)

    async def run(self, probe: Probe, *, exact: bool | None = None) -> tuple[float, list[uuid.UUID]]:
        """(milliseconds of the query alone, ids). `exact` forces the brute-force plan."""
        vector = self.embedder.embed_text(probe.query)
        use_exact = probe.scope.size <= self.exact_max if exact is None else exact
        async with self.conn.transaction():
            await self.conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(probe.scope.tenant))
            if not use_exact:
                await self.conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            sql = EXACT if use_exact else hnsw_sql(self.embedder.name, self.embedder.dim)
            args = (probe.scope.tenant, probe.scope.user_id)
            started = time.perf_counter()
            if use_exact:
                rows = await self.conn.fetch(sql, *args, self.embedder.name, vector, self.k)
            else:
                rows = await self.conn.fetch(sql, *args, vector, self.k)
            elapsed = (time.perf_counter() - started) * 1000
        return elapsed, [r["id"] for r in rows]

    async def close(self) -> None:
        await self.conn.close()


class InProcess:
    """The service code a request runs: one transaction per call, tenant bound, reinforcement batched
    in the background as the service does it (started and stopped by the caller)."""

    def __init__(
        self, engine: AsyncEngine, settings: Settings, embedder: HashEmbedder, spare: SpareReads | None = None
    ) -> None:
        self.maker = async_sessionmaker(engine, expire_on_commit=False)
        self.settings, self.embedder, self.counter = settings, embedder, TokenCounter()
        self.reinforcements = Reinforcements(engine, settings.reinforce_interval_s)
        self.spare = spare

    def _service(self, session: AsyncSession, tenant: TenantId) -> MemoryService:
        ctx = RequestContext.build(
            session,
            tenant,
            "bench",
            embedder=self.embedder,
            settings=self.settings,
            clock=SystemClock(),
            counter=self.counter,
            reinforcements=self.reinforcements,
            spare=self.spare,
        )
        return MemoryService(ctx)

    async def recall(self, probe: Probe) -> float:
        tenant = TenantId(probe.scope.tenant)
        started = time.perf_counter()
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            await self._service(session, tenant).recall(
                RecallInput(user_id=probe.scope.user_id, query=probe.query)
            )
        return (time.perf_counter() - started) * 1000

    async def uses_index(self, probe: Probe) -> bool:
        """The plan recall chooses for this scope (so the floor runs the same plan)."""
        tenant = TenantId(probe.scope.tenant)
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            cap = self.settings.exact_scan_max_rows
            size, table = await RecallStore(session, tenant).scope_size(
                Scope(tenant, probe.scope.user_id, None, Reach.WITH_GLOBAL), SystemClock().now(), cap + 1
            )
        return use_hnsw(PlanInput(size, table, cap, self.settings.hnsw_min_share))

    async def semantic_candidates(self, probe: Probe, k: int, use_index: bool) -> list[uuid.UUID]:
        """The cosine half of recall's candidates, as recall's own plan choice returns them."""
        tenant = TenantId(probe.scope.tenant)
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            scope = Scope(tenant, probe.scope.user_id, None, Reach.WITH_GLOBAL)
            query = CandidateQuery(
                scope,
                self.embedder.embed_text(probe.query),
                self.embedder.name,
                or_tsquery(probe.query),
                k,
                SystemClock().now(),
            )
            rows = await RecallStore(session, tenant).candidates(
                query, dim=self.embedder.dim, use_index=use_index
            )
        ranked = sorted((r for r in rows if r.cosine is not None), key=lambda r: -(r.cosine or 0.0))
        return [r.id for r in ranked[:k]]

    async def remember(self, scope: DataScope, items: list[str]) -> float:
        """Seconds to write `items` in one request (a batch when there are several)."""
        tenant = TenantId(scope.tenant)
        started = time.perf_counter()
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            await self._service(session, tenant).remember_many(
                [RememberInput(user_id=scope.user_id, content=c, source="import") for c in items]
            )
        return time.perf_counter() - started


@asynccontextmanager
async def served(
    app_url: str, settings: Settings, embedder: HashEmbedder, pool_size: int
) -> AsyncIterator[InProcess]:
    """The service in-process as the served app builds it: its own pool, spare reads when the settings
    have them, reinforcement in the background, the collector set up for serving (`tune_for_serving`)."""
    engine = create_engine(app_url, pool_size=pool_size, max_overflow=0)
    spare = (
        SpareReads.connect(app_url, settings.spare_connections, engine)
        if settings.spare_connections
        else None
    )
    service = InProcess(engine, settings, embedder, spare)
    service.reinforcements.start()
    tune_for_serving()
    try:
        yield service
    finally:
        await service.reinforcements.stop()
        TERM_INDEX.stop_reading()  # the term index's reads apart use the spare connections
        if spare is not None:
            await spare.dispose()
        await engine.dispose()
