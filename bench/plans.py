"""Recall on a table shared by scopes of very different sizes: the plans PostgreSQL chooses and what
they cost.

    python -m bench.plans [--small 200] [--large 10000] [--queries 150] [--grow 8000]

One tenant's user with `--small` memories and another's with `--large` (hash embedder) in one database;
then the service in-process (bench.perf's probe: one transaction per recall, reinforcement in the
background) recalls `--queries` times in each scope, the first 20 not counted. Reported per scope: p50
and p95 latency, this process's CPU and the database's backends' (its own processes, autovacuum among
them, apart; after a VACUUM ANALYZE of the seeded rows) per recall; then, for each pooled connection, how
many times each of recall's statements ran on a generic and on a custom plan (`pg_prepared_statements`). A custom plan is planned
again on every run. With `--grow N`, another user of the small scope's tenant then remembers N memories and
the small scope is measured twice more: at once, on the statistics of before (as during the minute until
autovacuum analyzes the table), and after an `ANALYZE`. With `--large 0` the small scope is alone in the
table beforehand (a new installation), the case where stale statistics mislead the planner:
`python -m bench.plans --large 0 --grow 8000`. Results: bench/results/plans/.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import uuid
from typing import Any

import asyncpg
import psutil
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.db.session import create_engine, set_tenant
from app.embeddings.hashing import HashEmbedder
from app.lib.settings import Settings
from app.memory.models import RememberInput
from app.tenancy.types import TenantId
from bench.common import bench_database, machine, write_results
from bench.perf.data import Scope
from bench.perf.measure import Probe, served
from bench.recall_latency import TOPICS, _service, seed
from bench.workers import db_cpu

WARM_UP = 20
# Recall's statements, by how their text begins.
STATEMENTS = {
    "WITH plain AS MATERIALIZED": "BM25 statistics",
    "WITH sem AS": "candidates",
    "WITH matched AS MATERIALIZED": "keyword candidates (spare connection)",
    "WITH p AS": "reinforcement",
}


def _name(statement: str) -> str | None:
    text = " ".join(statement.split())
    return next((name for start, name in STATEMENTS.items() if text.startswith(start)), None)


async def _postmaster(owner_url: str) -> int:
    """The database server's main process (a backend's parent, read while the backend lives)."""
    conn = await asyncpg.connect(owner_url)
    try:
        return int(psutil.Process(await conn.fetchval("SELECT pg_backend_pid()")).ppid())
    finally:
        await conn.close()


async def _settle(owner_url: str, command: str = "VACUUM ANALYZE") -> None:
    """Vacuum and analyze after seeding, so autovacuum's work is not counted as recall's."""
    conn = await asyncpg.connect(owner_url)
    try:
        await conn.execute(command)
    finally:
        await conn.close()


async def run(
    owner_url: str, app_url: str, sizes: dict[str, int], queries: int, grow: int = 0
) -> dict[str, Any]:
    scopes = {label: (await seed(app_url, owner_url, n))[0] for label, n in sizes.items()}
    postmaster = await _postmaster(owner_url)
    await _settle(owner_url)
    rng = random.Random(11)
    texts = [" ".join(rng.choice(TOPICS) for _ in range(rng.randint(1, 8))) for _ in range(queries)]
    drivers: dict[int, Any] = {}

    def note_connection(conn: Any, *_: Any) -> None:
        driver = conn.connection.driver_connection
        drivers[id(driver)] = driver

    event.listen(Engine, "before_cursor_execute", note_connection)
    settings = Settings(embedder="hash")
    cells: dict[str, Any] = {}
    try:
        async with served(app_url, settings, HashEmbedder(), settings.db_pool_size) as service:
            for label, tenant in scopes.items():
                scope = Scope(uuid.UUID(str(tenant)), "bench-user", sizes[label])
                cells[label] = await _cell(service, scope, texts, postmaster)
            if grow:
                small = Scope(uuid.UUID(str(scopes["small"])), "bench-user", sizes["small"])
                await grow_beside(app_url, scopes["small"], grow)
                cells[f"small, beside {grow} new rows"] = await _cell(service, small, texts, postmaster)
                await _settle(owner_url, "ANALYZE")
                cells[f"small, beside {grow} rows, analyzed"] = await _cell(service, small, texts, postmaster)
            plans = await _plans(drivers.values())
    finally:
        event.remove(Engine, "before_cursor_execute", note_connection)
    return {"scopes": cells, "plans": plans}


async def _cell(service: Any, scope: Scope, texts: list[str], postmaster: int) -> dict[str, Any]:
    """Recall `texts` in `scope`, the first WARM_UP not counted: latency, and CPU per recall."""
    latencies = []
    for i, query in enumerate(texts):
        if i == WARM_UP:
            cpu, db = time.process_time(), db_cpu(postmaster)
        started = time.perf_counter()
        await service.recall(Probe(scope, query))
        latencies.append((time.perf_counter() - started) * 1000)
    counted = len(texts) - WARM_UP
    return {
        "memories": scope.size,
        "p50_ms": round(statistics.median(latencies[WARM_UP:]), 2),
        "p95_ms": round(sorted(latencies[WARM_UP:])[int(0.95 * counted)], 2),
        "app_cpu_ms": round((time.process_time() - cpu) / counted * 1000, 2),
        "db_cpu_ms": round((db_cpu(postmaster)[0] - db[0]) / counted * 1000, 2),
        "db_background_cpu_ms": round((db_cpu(postmaster)[1] - db[1]) / counted * 1000, 2),
    }


async def grow_beside(app_url: str, tenant: TenantId, n: int) -> None:
    """`n` memories of another user of `tenant`, in batches of 500 (as an import or a busy user writes)."""
    engine = create_engine(app_url)
    settings, embedder, rng = Settings(embedder="hash"), HashEmbedder(), random.Random(7)
    try:
        for start in range(0, n, 500):
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                await set_tenant(session, tenant)
                items = [
                    RememberInput(user_id="other-user", content=f"note {start + i}: {rng.choice(TOPICS)}")
                    for i in range(min(500, n - start))
                ]
                await _service(session, tenant, settings, embedder).remember_many(items)
    finally:
        await engine.dispose()


async def _plans(connections: Any) -> list[dict[str, Any]]:
    """Generic and custom plan counts of recall's statements, per pooled connection still open."""
    found = []
    for index, conn in enumerate(connections):
        if conn.is_closed():
            continue
        rows = await conn.fetch("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        for row in rows:
            name = _name(row["statement"])
            if name is not None and row["generic_plans"] + row["custom_plans"] > 0:
                found.append(
                    {
                        "connection": index,
                        "statement": name,
                        "generic": row["generic_plans"],
                        "custom": row["custom_plans"],
                    }
                )
    return found


def render(result: dict[str, Any]) -> str:
    lines = [
        "| scope | memories | p50 / p95 ms | app CPU ms/recall | database CPU ms/recall (background) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {label} | {c['memories']} | {c['p50_ms']} / {c['p95_ms']} | {c['app_cpu_ms']} | {c['db_cpu_ms']} ({c['db_background_cpu_ms']}) |"
        for label, c in result["scopes"].items()
    ]
    lines += ["", "| connection | statement | generic plans | custom plans |", "|---|---|---|---|"]
    lines += [
        f"| {p['connection']} | {p['statement']} | {p['generic']} | {p['custom']} |" for p in result["plans"]
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--grow", type=int, default=0, help="then this many rows beside the small scope")
    args = parser.parse_args()
    if args.queries <= WARM_UP:
        parser.error(f"--queries must be more than the {WARM_UP} warm-up recalls")
    sizes = {"small": args.small, "large": args.large} if args.large else {"small": args.small}
    with bench_database() as (owner_url, app_url):
        result = asyncio.run(run(owner_url, app_url, sizes, args.queries, args.grow))
    payload = {**result, "queries": args.queries, "machine": machine()}
    markdown = render(result)
    print(markdown)
    print(f"results in {write_results('plans', payload, markdown)}")


if __name__ == "__main__":
    main()
