"""Recall on a table shared by scopes of very different sizes: the plans PostgreSQL chooses and what
they cost.

    python -m bench.plans [--small 200] [--large 10000] [--queries 150]

One tenant's user with `--small` memories and another's with `--large` (hash embedder) in one database;
then the service in-process (bench.perf's probe: one transaction per recall, reinforcement in the
background) recalls `--queries` times in each scope, the first 20 not counted. Reported per scope: p50
and p95 latency, this process's CPU and the database's (every process of its server, after a VACUUM
ANALYZE of the seeded rows; run it on an otherwise idle database) per recall; then, for each pooled connection, how many times each of recall's
statements ran on a generic and on a custom plan (`pg_prepared_statements`). A custom plan is planned
again on every run. Results: bench/results/plans/.
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

from app.embeddings.hashing import HashEmbedder
from app.lib.settings import Settings
from bench.common import bench_database, machine, write_results
from bench.perf.data import Scope
from bench.perf.measure import Probe, served
from bench.recall_latency import TOPICS, seed
from bench.workers import tree_cpu

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


async def _settle(owner_url: str) -> None:
    """Vacuum and analyze after seeding, so autovacuum's work is not counted as recall's."""
    conn = await asyncpg.connect(owner_url)
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def run(owner_url: str, app_url: str, sizes: dict[str, int], queries: int) -> dict[str, Any]:
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
                latencies = []
                for i, query in enumerate(texts):
                    if i == WARM_UP:
                        cpu, db = time.process_time(), tree_cpu(postmaster)
                    started = time.perf_counter()
                    await service.recall(Probe(scope, query))
                    latencies.append((time.perf_counter() - started) * 1000)
                counted = len(texts) - WARM_UP
                cells[label] = {
                    "memories": sizes[label],
                    "p50_ms": round(statistics.median(latencies[WARM_UP:]), 2),
                    "p95_ms": round(sorted(latencies[WARM_UP:])[int(0.95 * counted)], 2),
                    "app_cpu_ms": round((time.process_time() - cpu) / counted * 1000, 2),
                    "db_cpu_ms": round((tree_cpu(postmaster) - db) / counted * 1000, 2),
                }
            plans = await _plans(drivers.values())
    finally:
        event.remove(Engine, "before_cursor_execute", note_connection)
    return {"scopes": cells, "plans": plans}


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
        "| scope | memories | p50 / p95 ms | app CPU ms/recall | database CPU ms/recall |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {label} | {c['memories']} | {c['p50_ms']} / {c['p95_ms']} | {c['app_cpu_ms']} | {c['db_cpu_ms']} |"
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
    args = parser.parse_args()
    if args.queries <= WARM_UP:
        parser.error(f"--queries must be more than the {WARM_UP} warm-up recalls")
    sizes = {"small": args.small, "large": args.large}
    with bench_database() as (owner_url, app_url):
        result = asyncio.run(run(owner_url, app_url, sizes, args.queries))
    payload = {**result, "queries": args.queries, "machine": machine()}
    markdown = render(result)
    print(markdown)
    print(f"results in {write_results('plans', payload, markdown)}")


if __name__ == "__main__":
    main()
