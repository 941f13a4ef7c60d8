"""One dataset of the peer line: load both systems, single adds, then the interleaved queries."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import async_sessionmaker
from tqdm import tqdm

from app.db.session import create_engine, set_tenant
from app.embeddings.local import LocalEmbedder, _load_model, bundled_model_path, set_torch_threads
from app.lib.clock import SystemClock
from app.lib.settings import Settings
from app.memory.models import RecallInput, RecallResult, RememberInput
from app.store.candidates import CandidateQuery, RecallStore, or_tsquery
from app.tenancy import admin
from app.tenancy.types import TenantId
from app.vocabulary import Reach, Scope
from bench.common import bench_database, percentiles
from bench.peers.data import Fact, Query, exact_top_k, facts, overlap, queries
from bench.perf.http import serve
from bench.perf.measure import InProcess

K = 10
WARMUP = 5  # unmeasured first calls of each kind (lazy initialisation, cold pages)
TENANT = "peers"
WRITER = "writer"  # the user single adds go to: no query reads it
# Engram's single adds over HTTP, after its in-process ones: a user of their own. Into WRITER, each met the
# in-process add of the same fact (the texts differ in their suffix), a near-duplicate for the write path's
# supersession check that the other systems' adds never met.
HTTP_WRITER = "writer-http"


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def threads_section(texts: list[str], settings_threads: int) -> dict[str, Any]:
    """One-query encodes at torch's default thread count and at the service's, interleaved."""
    import torch

    model = _load_model(bundled_model_path())
    default = torch.get_num_threads()
    counts = sorted({default, settings_threads or default})
    ms: dict[int, list[float]] = {n: [] for n in counts}
    for i, t in enumerate(texts):
        for n in counts if i % 2 else counts[::-1]:
            torch.set_num_threads(n)
            started = time.perf_counter()
            model.encode([t], normalize_embeddings=True, convert_to_numpy=True)
            if i >= WARMUP:
                ms[n].append(_ms(started))
    torch.set_num_threads(default)
    return {
        "load_average": load_average(),
        "default_threads": default,
        "encode_ms_by_threads": {str(n): percentiles(v) for n, v in ms.items()},
    }


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def summary(values: list[float]) -> dict[str, float]:
    return {"mean": round(statistics.fmean(values), 3), "min": round(min(values), 3)}


class Engram(InProcess):
    """The service in-process, returning recall's result (the timing is the caller's)."""

    async def recall_result(self, tenant: TenantId, query: Query) -> RecallResult:
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            return await self._service(session, tenant).recall(
                RecallInput(user_id=query.user_id, query=query.text)
            )

    async def write(self, tenant: TenantId, items: list[Fact]) -> None:
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            await self._service(session, tenant).remember_many(
                [RememberInput(user_id=f.user_id, content=f.text) for f in items]
            )

    async def stored_vectors(self, tenant: TenantId, fact_list: list[Fact]) -> tuple[list[Fact], np.ndarray]:
        """The facts Engram holds live (a fact another one superseded is not a candidate) and the vectors
        it stored for them: what its exact scan compares (the runtime that made them may differ from the
        bench's own torch encodings by up to 1e-3)."""
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            rows = await session.execute(
                text(
                    "SELECT content, embedding::text AS v FROM memories"
                    " WHERE tenant_id = :t AND status IN ('active', 'pinned')"
                ),
                {"t": tenant},
            )
            stored = {content: np.array(json.loads(v), dtype=np.float32) for content, v in rows}
        live = [f for f in fact_list if f.text in stored]
        return live, np.stack([stored[f.text] for f in live])

    async def cosine_candidates(self, tenant: TenantId, query: Query, vector: list[float]) -> list[str]:
        """Texts of the cosine half of recall's candidates (exact plan: these scopes are small)."""
        async with self.maker() as session, session.begin():
            await set_tenant(session, tenant)
            scope = Scope(tenant, query.user_id, None, Reach.WITH_GLOBAL)
            cq = CandidateQuery(
                scope, vector, self.embedder.name, or_tsquery(query.text), K, SystemClock().now()
            )
            rows = await RecallStore(session, tenant).candidates(cq, dim=self.embedder.dim, use_index=False)
        ranked = sorted((r for r in rows if r.cosine is not None), key=lambda r: -(r.cosine or 0.0))
        return [r.content for r in ranked[:K]]


class Mem0Peer:
    """mem0's open-source Memory, its pgvector store in its own database, the bundled MiniLM."""

    def __init__(self, conninfo: str, model_path: Path, history: Path) -> None:
        from mem0 import Memory

        config = {
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    "connection_string": conninfo,
                    "collection_name": "mem0",
                    "embedding_model_dims": 384,
                    "hnsw": True,
                    "minconn": 1,
                    "maxconn": 4,
                },
            },
            "embedder": {
                "provider": "huggingface",
                "config": {
                    "model": str(model_path),
                    "embedding_dims": 384,
                    "model_kwargs": {"device": "cpu", "local_files_only": True},
                },
            },
            # Never called (infer=False); a closed local port makes any accidental call fail at once.
            "llm": {
                "provider": "openai",
                "config": {"api_key": "no-llm-call", "openai_base_url": "http://127.0.0.1:9/v1"},
            },
            "history_db_path": str(history),
        }
        self.memory = Memory.from_config(config)
        self.embed_ms: list[float] = []
        embedder = self.memory.embedding_model
        inner = embedder.embed

        def timed(text_: str, memory_action: str | None = None) -> list[float]:
            started = time.perf_counter()
            vector: list[float] = inner(text_, memory_action)
            if memory_action == "search":
                self.embed_ms.append(_ms(started))
            return vector

        embedder.embed = timed

    def add_many(self, items: list[Fact]) -> None:
        messages = [{"role": "user", "content": f.text} for f in items]
        self.memory.add(messages, user_id=items[0].user_id, infer=False)

    def add_one(self, fact: Fact) -> None:
        self.memory.add([{"role": "user", "content": fact.text}], user_id=fact.user_id, infer=False)

    def search(self, query: Query) -> list[str]:
        found = self.memory.search(query.text, filters={"user_id": query.user_id}, top_k=K)
        return [r["memory"] for r in found["results"]]


def conninfo_for(owner_url: str, database: str) -> str:
    return make_url(owner_url).set(drivername="postgresql", database=database).render_as_string(False)


async def create_database(owner_url: str, name: str) -> None:
    engine = create_engine(owner_url, pool_size=1, max_overflow=0)
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    await engine.dispose()
    engine = create_engine(make_url(owner_url).set(database=name).render_as_string(False), pool_size=1)
    async with engine.begin() as conn:
        await conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    await engine.dispose()


async def create_tenant(owner_url: str) -> tuple[TenantId, str]:
    engine = create_engine(owner_url, pool_size=1, max_overflow=0)
    async with async_sessionmaker(engine)() as session, session.begin():
        created = await admin.create_tenant(session, TENANT)
    await engine.dispose()
    return created.tenant_id, created.plaintext


def by_user(items: list[Fact]) -> dict[str, list[Fact]]:
    out: dict[str, list[Fact]] = {}
    for f in items:
        out.setdefault(f.user_id, []).append(f)
    return out


def run_dataset(
    name: str,
    total: int,
    users: int,
    n_queries: int,
    n_single: int,
    *,
    with_mem0: bool,
    with_http: bool,
    workdir: Path,
) -> dict[str, Any]:
    """A fresh embedded server per dataset (migrations run outside the event loop)."""
    load_start = load_average()
    fact_list = facts(total, users)
    query_list = queries(n_queries + WARMUP, users)
    model_path = bundled_model_path()
    plain = _load_model(model_path)  # the "plain script": the model called directly
    fact_vectors = plain.encode([f.text for f in fact_list], batch_size=64, normalize_embeddings=True)
    out: dict[str, Any] = {"name": name, "facts": total, "users": users, "queries": n_queries}
    systems: dict[str, dict[str, Any]] = {"engram_in_process": {}}
    if with_mem0:
        systems = {"mem0": {}, **systems}
    if with_http:
        systems["engram_http"] = {}
    with bench_database() as (owner_url, app_url):

        async def measure() -> None:
            tenant, key = await create_tenant(owner_url)
            mem0: Mem0Peer | None = None
            if with_mem0:
                await create_database(owner_url, "mem0")
                mem0 = Mem0Peer(conninfo_for(owner_url, "mem0"), model_path, workdir / f"history-{total}.db")
            settings = Settings(embedder="local")
            # As the service loads it; the thread count is process-wide, so mem0 and the plain script in
            # this process run with it too (the HTTP server applies the same setting in its own process).
            embedder = await LocalEmbedder.load(
                model_path, threads=settings.local_threads, parallel=settings.local_parallel()
            )
            set_torch_threads(settings.local_threads)  # this thread: mem0's and the plain script's encodes
            out["torch_threads"] = torch_threads()
            engine = create_engine(app_url, pool_size=4, max_overflow=0)
            engram = Engram(engine, settings, embedder)
            engram.reinforcements.start()
            try:
                await write_phase(systems, engram, tenant, mem0, fact_list, n_single)
                await query_phase(systems, engram, tenant, mem0, plain, embedder, owner_url, app_url, key,
                                  fact_list, fact_vectors, query_list, with_http, n_single, out)  # fmt: skip
            finally:
                await engram.reinforcements.stop()
                await engine.dispose()
                await embedder.aclose()
                if mem0 is not None:
                    mem0.memory.vector_store.connection_pool.close()

        asyncio.run(measure())
    out["systems"] = systems
    out["load_average"] = {"start": load_start, "end": load_average()}
    return out


async def write_phase(
    systems: dict[str, dict[str, Any]],
    engram: Engram,
    tenant: TenantId,
    mem0: Mem0Peer | None,
    fact_list: list[Fact],
    n_single: int,
) -> None:
    """Both systems get the same facts user by user, alternating; then single adds to WRITER."""
    batch_s: dict[str, float] = {"mem0": 0.0, "engram_in_process": 0.0}
    for i, (_, items) in enumerate(tqdm(by_user(fact_list).items(), desc="load (batch)", leave=False)):
        order = ["engram_in_process", "mem0"] if i % 2 else ["mem0", "engram_in_process"]
        for system in order:
            started = time.perf_counter()
            if system == "mem0":
                if mem0 is None:
                    continue
                mem0.add_many(items)
            else:
                await engram.write(tenant, items)
            batch_s[system] += time.perf_counter() - started
    for system, seconds in batch_s.items():
        if system in systems:
            systems[system]["add_batch_per_s"] = round(len(fact_list) / seconds, 1)
    singles = [Fact(WRITER, f"{f.text} (single {i})") for i, f in enumerate(fact_list[: n_single + WARMUP])]
    ms: dict[str, list[float]] = {"mem0": [], "engram_in_process": []}
    for i, fact in enumerate(tqdm(singles, desc="single adds", leave=False)):
        order = ["engram_in_process", "mem0"] if i % 2 else ["mem0", "engram_in_process"]
        for system in order:
            started = time.perf_counter()
            if system == "mem0":
                if mem0 is None:
                    continue
                mem0.add_one(fact)
            else:
                await engram.write(tenant, [fact])
            ms[system].append(_ms(started))
    for system, values in ms.items():
        if system in systems:
            record_singles(systems[system], values[WARMUP:])


def record_singles(target: dict[str, Any], values: list[float]) -> None:
    target["add_single_ms"] = percentiles(values)
    target["add_single_per_s"] = round(len(values) / (sum(values) / 1000), 1)


async def http_writes(client: httpx.AsyncClient, headers: dict[str, str], singles: list[Fact]) -> list[float]:
    """Milliseconds of each single remember over HTTP (into HTTP_WRITER)."""
    values = []
    for fact in singles:
        body = {"user_id": fact.user_id, "content": fact.text}
        started = time.perf_counter()
        (await client.post("/v1/memories", json=body, headers=headers)).raise_for_status()
        values.append(_ms(started))
    return values


async def query_phase(
    systems: dict[str, dict[str, Any]],
    engram: Engram,
    tenant: TenantId,
    mem0: Mem0Peer | None,
    plain: Any,
    embedder: LocalEmbedder,
    owner_url: str,
    app_url: str,
    key: str,
    fact_list: list[Fact],
    fact_vectors: np.ndarray,
    query_list: list[Query],
    with_http: bool,
    n_single: int,
    out: dict[str, Any],
) -> None:
    """The same queries to every system in rotating order; exactness checked outside the timings."""
    search_ms: dict[str, list[float]] = {s: [] for s in systems}
    embed_ms: dict[str, list[float]] = {s: [] for s in systems}
    returned: dict[str, list[float]] = {s: [] for s in systems}
    overlaps: dict[str, list[float]] = {s: [] for s in systems}
    candidate_overlaps: list[float] = []
    live, stored = await engram.stored_vectors(tenant, fact_list)  # the candidates' exactness: against these
    plain_ms: list[float] = []
    service_embed_ms: list[float] = []
    headers = {"Authorization": f"Bearer {key}"}
    extra = {"ENGRAM_EMBEDDER": "local"}
    with serve(owner_url, app_url, extra, startup_s=300) if with_http else nullcontext() as server:
        client = httpx.AsyncClient(base_url=server.base, timeout=60) if server is not None else None
        try:
            if client is not None:  # single remembers first, to a user no query reads
                singles = [
                    Fact(HTTP_WRITER, f"{f.text} (over HTTP {i})")
                    for i, f in enumerate(fact_list[: n_single + WARMUP])
                ]
                record_singles(systems["engram_http"], (await http_writes(client, headers, singles))[WARMUP:])
            for i, query in enumerate(tqdm(query_list, desc="queries", leave=False)):
                query_vector = plain.encode([query.text], normalize_embeddings=True)[0]
                exact = exact_top_k(fact_list, fact_vectors, query, query_vector, K)
                measured = i >= WARMUP

                async def run_mem0(
                    q: Query = query, exact: list[str] = exact, measured: bool = measured
                ) -> None:
                    assert mem0 is not None
                    started = time.perf_counter()
                    got = mem0.search(q)
                    elapsed = _ms(started)
                    if measured:
                        search_ms["mem0"].append(elapsed)
                        returned["mem0"].append(len(got))
                        overlaps["mem0"].append(overlap(got, exact))

                async def run_in_process(
                    q: Query = query, exact: list[str] = exact, measured: bool = measured
                ) -> None:
                    started = time.perf_counter()
                    result = await engram.recall_result(tenant, q)
                    elapsed = _ms(started)
                    if measured:
                        texts = [m.memory.content for m in result.memories]
                        search_ms["engram_in_process"].append(elapsed)
                        embed_ms["engram_in_process"].append(result.latency_ms["embed"])
                        returned["engram_in_process"].append(len(texts))
                        overlaps["engram_in_process"].append(overlap(texts[:K], exact))

                async def run_http(
                    q: Query = query, exact: list[str] = exact, measured: bool = measured
                ) -> None:
                    assert client is not None
                    body = {"user_id": q.user_id, "query": q.text}
                    started = time.perf_counter()
                    response = await client.post("/v1/recall", json=body, headers=headers)
                    elapsed = _ms(started)
                    response.raise_for_status()
                    if measured:
                        data = response.json()
                        texts = [m["memory"]["content"] for m in data["memories"]]
                        search_ms["engram_http"].append(elapsed)
                        embed_ms["engram_http"].append(data["trace"]["latency_ms"]["embed"])
                        returned["engram_http"].append(len(texts))
                        overlaps["engram_http"].append(overlap(texts[:K], exact))

                async def run_plain(q: Query = query, measured: bool = measured) -> None:
                    started = time.perf_counter()
                    plain.encode([q.text], normalize_embeddings=True, convert_to_numpy=True)
                    elapsed = _ms(started)
                    started = time.perf_counter()
                    await embedder.embed([q.text])
                    service_path = _ms(started)
                    if measured:
                        plain_ms.append(elapsed)
                        service_embed_ms.append(service_path)

                steps: list[Callable[[], Awaitable[None]]] = [run_in_process, run_plain]
                if mem0 is not None:
                    steps.append(run_mem0)
                if client is not None:
                    steps.append(run_http)
                shift = i % len(steps)
                for step in steps[shift:] + steps[:shift]:
                    await step()
                if measured:
                    vector = (await embedder.embed([query.text]))[0]
                    got = await engram.cosine_candidates(tenant, query, vector)
                    mine = exact_top_k(live, stored, query, np.asarray(vector, dtype=np.float32), K)
                    candidate_overlaps.append(overlap(got, mine))
        finally:
            if client is not None:
                await client.aclose()
    for system, target in systems.items():
        target["search_ms"] = percentiles(search_ms[system])
        if system == "mem0" and mem0 is not None:
            target["embed_ms"] = percentiles(mem0.embed_ms[WARMUP:])
        elif embed_ms[system]:
            target["embed_ms"] = percentiles(embed_ms[system])
        target["returned"] = summary(returned[system])
        target["overlap"] = summary(overlaps[system])
    systems["engram_in_process"]["candidate_overlap"] = summary(candidate_overlaps)
    out["plain_embed_ms"] = percentiles(plain_ms)
    out["service_embed_call_ms"] = percentiles(service_embed_ms)  # LocalEmbedder.embed, outside a recall


__all__ = ["conninfo_for", "run_dataset", "summary"]
