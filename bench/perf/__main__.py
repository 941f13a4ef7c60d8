"""Speed and scale against the raw PostgreSQL floor, measured in one run on one machine.

    python -m bench.perf [--sizes 10000,100000] [--one-user 100000] [--million] [--queries 200]
                         [--clients 1,16,64] [--load-seconds 10] [--embedders hash,local]

For each dataset (N memories over 1k tenants with a long-tailed spread of users, and N in one user):
COPY load (the write floor), recall latency of the raw scoped top-k query sent with asyncpg (the read
floor), the service in-process and over HTTP, exactness against brute force, single and batch writes,
and concurrent HTTP load. Then, apart, the embedding models themselves: a query's latency (what a
recall adds to the hash-embedder figures) and batch rows/s. Results: bench/results/perf/ (JSON,
Markdown, PNG).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import async_sessionmaker
from tqdm import tqdm

from app.db.session import create_engine
from app.db.urls import to_asyncpg_dsn
from app.embeddings.hashing import HashEmbedder
from app.lib.settings import Settings
from app.tenancy import admin
from bench.common import bench_database, machine, percentiles, write_results
from bench.perf import neighbour
from bench.perf.data import Scope, TextGenerator, bulk_load, copy_floor, layout
from bench.perf.embedders import EMBEDDERS, embedders_section
from bench.perf.http import load, serve
from bench.perf.measure import Floor, InProcess, Probe, served
from bench.perf.report import render


@dataclass(frozen=True)
class Spec:
    name: str
    total: int
    tenants: int
    users: int


def probes_for(scopes: list[Scope], text: TextGenerator, count: int) -> list[Probe]:
    """Mostly random scopes (small users dominate, as in production), plus the largest one."""
    rng = random.Random(5)
    largest = max(scopes, key=lambda s: s.size)
    chosen = [largest] * max(1, count // 5) + rng.choices(scopes, k=count - max(1, count // 5))
    return [Probe(s, text.query()) for s in chosen]


async def make_keys(owner_url: str, tenants: set[Any]) -> dict[Any, str]:
    engine = create_engine(owner_url, pool_size=1, max_overflow=0)
    keys = {}
    async with async_sessionmaker(engine)() as session, session.begin():
        for tenant in tenants:
            keys[tenant] = (await admin.create_key(session, f"perf-{tenant.hex[:12]}", "perf")).plaintext
    await engine.dispose()
    return keys


async def latency_section(
    owner_url: str, app_url: str, probes: list[Probe], settings: Settings
) -> dict[str, Any]:
    embedder = HashEmbedder()
    k = settings.candidate_k
    floor = await Floor.connect(to_asyncpg_dsn(app_url), embedder, settings.exact_scan_max_rows, k)
    async with served(app_url, settings, embedder, pool_size=4) as service:
        floor_ms, local_ms, overlaps = [], [], []
        for i, probe in enumerate(tqdm(probes, desc="floor / in-process / exactness", leave=False)):
            hnsw = await service.uses_index(probe)
            # Whichever runs first pays for the scope's pages not being in shared buffers yet; alternate.
            if i % 2:
                local_ms.append(await service.recall(probe))
            ms, _ = await floor.run(probe, exact=not hnsw)
            floor_ms.append(ms)
            if not i % 2:
                local_ms.append(await service.recall(probe))
            _, exact_ids = await floor.run(probe, exact=True)
            got = set(await service.semantic_candidates(probe, k, hnsw))
            overlaps.append(len(got & set(exact_ids)) / len(exact_ids) if exact_ids else 1.0)
    await floor.close()
    return {
        "floor_ms": percentiles(floor_ms[5:]),
        "in_process_ms": percentiles(local_ms[5:]),
        "exactness": {"mean": round(statistics.fmean(overlaps), 4), "min": round(min(overlaps), 4)},
    }


async def write_section(owner_url: str, app_url: str, scope: Scope, settings: Settings) -> dict[str, Any]:
    """COPY (the floor), single remembers and batches of 500 into the largest scope, every index in place."""
    copy_rps = await copy_floor(
        to_asyncpg_dsn(owner_url), scope, TextGenerator(seed=31), HashEmbedder(), 2000
    )
    engine = create_engine(app_url, pool_size=4, max_overflow=0)
    service = InProcess(engine, settings, HashEmbedder())
    service.reinforcements.start()
    text = TextGenerator(seed=99)
    single = [await service.remember(scope, [text.sentence()]) for _ in range(100)]
    batch_seconds = [await service.remember(scope, [text.sentence() for _ in range(500)]) for _ in range(4)]
    await service.reinforcements.stop()
    await engine.dispose()
    return {
        "copy_rows_per_s": round(copy_rps, 1),
        "writes": {
            "single_rows_per_s": round(len(single) / sum(single), 1),
            "batch_rows_per_s": round(2000 / sum(batch_seconds), 1),
        },
    }


async def http_and_write_sections(
    owner_url: str, app_url: str, probes: list[Probe], args: argparse.Namespace, settings: Settings
) -> dict[str, Any]:
    """Sequential HTTP recall, then the writes (they add rows to the largest scope, which no latency
    probe may see), then concurrent load."""
    keys = await make_keys(owner_url, {p.scope.tenant for p in probes})
    text = TextGenerator(seed=13)
    hot = probes[0].scope  # the largest scope: every load request lands on one tenant
    out: dict[str, Any] = {}
    with serve(owner_url, app_url, server=args.server) as server:
        sequential = []
        async with httpx.AsyncClient(base_url=server.base, timeout=60) as client:
            for probe in tqdm(probes, desc="HTTP recall", leave=False):
                headers = {"Authorization": f"Bearer {keys[probe.scope.tenant]}"}
                body = {"user_id": probe.scope.user_id, "query": probe.query}
                started = time.perf_counter()
                (await client.post("/v1/recall", json=body, headers=headers)).raise_for_status()
                sequential.append((time.perf_counter() - started) * 1000)
        out["http_ms"] = percentiles(sequential[5:])
        out |= await write_section(owner_url, app_url, hot, settings)
        for kind in ("recall", "remember"):
            for n in args.clients:

                def request(i: int, kind: str = kind) -> tuple[str, dict[str, Any]]:
                    if kind == "recall":
                        return "/v1/recall", {"user_id": hot.user_id, "query": text.query()}
                    return "/v1/memories", {"user_id": hot.user_id, "content": f"{text.sentence()} #{i}"}

                result = await load(server.base, keys[hot.tenant], n, args.load_seconds, request)
                out[f"load_{kind}_{n}"] = {
                    "clients": n,
                    "requests": result.requests,
                    "errors": result.errors,
                    "error_kinds": result.error_kinds,
                    "rps": round(result.rps, 1),
                    **{k: v for k, v in percentiles(result.latencies_ms).items() if k in ("p50", "p99")},
                }
        out["peak_rss_mb"] = round(server.peak_rss / 2**20, 1)
    return out


async def measure_spec(spec: Spec, args: argparse.Namespace, owner_url: str, app_url: str) -> dict[str, Any]:
    settings = Settings(embedder="hash")
    scopes = layout(spec.total, spec.tenants, spec.users)
    owner_dsn = to_asyncpg_dsn(owner_url)
    build_s = await bulk_load(owner_dsn, scopes, TextGenerator(), HashEmbedder())
    probes = probes_for(scopes, TextGenerator(seed=21), args.queries)
    result: dict[str, Any] = {"spec": spec.__dict__, "hnsw_build_s": round(build_s, 1)}
    result["largest_scope"] = max(s.size for s in scopes)
    result |= await latency_section(owner_url, app_url, probes, settings)
    result |= await http_and_write_sections(owner_url, app_url, probes, args, settings)
    result["server"] = args.server
    return result


def run_spec(spec: Spec, args: argparse.Namespace) -> dict[str, Any]:
    """A fresh database per dataset (migrations run outside the event loop)."""
    with bench_database() as (owner_url, app_url):
        return asyncio.run(measure_spec(spec, args, owner_url, app_url))


def _slots(args: argparse.Namespace) -> tuple[int, ...]:
    return tuple(int(s) for s in args.worker_slots.split(",") if s.strip())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--one-user", type=int, default=100_000)
    parser.add_argument("--million", action="store_true", help="also 1M memories over 1k tenants (slow)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", default="1,16,64")
    parser.add_argument("--load-seconds", type=float, default=10.0)
    parser.add_argument("--server", choices=("uvicorn", "granian"), default="uvicorn")
    parser.add_argument(
        "--embedders", default="hash,local", help="models timed apart, after the datasets ('' for none)"
    )
    parser.add_argument(
        "--neighbour-only",
        action="store_true",
        help="only the noisy-neighbour line (bench/perf/neighbour.py)",
    )
    parser.add_argument(
        "--writers", type=int, default=48, help="tenant B's writers in the noisy-neighbour line"
    )
    parser.add_argument("--neighbour-queries", type=int, default=150, help="tenant A's recalls per phase")
    parser.add_argument(
        "--worker-slots",
        default=",".join(str(s) for s in neighbour.DEFAULT_SLOTS),
        help="ENGRAM_WORKER_SLOTS values the noisy-neighbour line compares (0: no cap)",
    )
    args = parser.parse_args()
    if args.neighbour_only:
        with bench_database() as (owner_url, app_url):
            result = asyncio.run(
                neighbour.run(owner_url, app_url, args.writers, args.neighbour_queries, _slots(args))
            )
        payload = {"machine": machine(), "noisy_neighbour": result}
        write_results("perf-neighbour", payload, neighbour.render(result))
        print(neighbour.render(result))
        return
    args.clients = [int(c) for c in args.clients.split(",")]
    names = [name for name in args.embedders.split(",") if name]
    if unknown := set(names) - set(EMBEDDERS):
        parser.error(f"unknown embedders: {', '.join(sorted(unknown))}")
    specs = [Spec(f"{int(n) // 1000}k over 1k tenants", int(n), 1000, 5) for n in args.sizes.split(",") if n]
    if args.million:
        specs.append(Spec("1M over 1k tenants", 1_000_000, 1000, 5))
    if args.one_user:
        specs.append(Spec(f"{args.one_user // 1000}k in one user", args.one_user, 1, 1))
    results = [run_spec(spec, args) for spec in tqdm(specs, desc="datasets")]
    with bench_database() as (owner_url, app_url):  # a database of its own: two small tenants
        noisy = asyncio.run(
            neighbour.run(owner_url, app_url, args.writers, args.neighbour_queries, _slots(args))
        )
    # After the datasets, so loading torch cannot disturb a latency figure.
    embedders = asyncio.run(embedders_section(names, queries=args.queries))
    payload = {"machine": machine(), "datasets": results, "embedders": embedders, "noisy_neighbour": noisy}
    markdown = render(payload, bench_dir=write_results("perf", payload, ""))
    print(markdown)
    print(neighbour.render(noisy))


if __name__ == "__main__":
    main()
