"""Where a small-scope recall's fixed costs go: EXPLAIN ANALYZE of the candidate statement and a profile.

    python -m bench.peers.sql_profile [--tables 2000,10000] [--scope 100] [--runs 30]

For each table size, a fresh embedded database holds `scope`-row users (one tenant, as the peer line
lays them out; hash vectors, which cost the statement what any 384-d vector costs). For one user:
recall's own candidate statement (captured as app/store/candidates.py sends it) under
`EXPLAIN (ANALYZE, BUFFERS)`, its server-side execution time against the client's wall time for the
same statement, each statement of a whole recall with its wall time, and a pyinstrument profile of
recalls. Results: bench/results/peers-sql/.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.session import create_engine, set_tenant
from app.db.urls import to_asyncpg_dsn
from app.embeddings.hashing import HashEmbedder
from app.lib.clock import SystemClock
from app.lib.settings import Settings
from app.store.candidates import CandidateQuery, RecallStore, or_tsquery
from app.tenancy.types import TenantId
from app.vocabulary import Reach, Scope
from bench.common import bench_database, write_results
from bench.perf.data import Scope as DataScope
from bench.perf.data import TextGenerator, bulk_load
from bench.perf.measure import InProcess, Probe

TENANT = "0f0e0d0c-0b0a-4908-8706-050403020100"
EXECUTION = re.compile(r"Execution Time: ([\d.]+) ms")
PLANNING = re.compile(r"Planning Time: ([\d.]+) ms")


class Captured:
    """The statements an engine sends (text and parameters), in order, with their wall times."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.statements: list[tuple[str, Any, float]] = []
        self._started = 0.0
        sync = engine.sync_engine
        event.listen(sync, "before_cursor_execute", self._before)
        event.listen(sync, "after_cursor_execute", self._after)

    def _before(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        self._started = time.perf_counter()

    def _after(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        self.statements.append((statement, parameters, (time.perf_counter() - self._started) * 1000))


def first_line(statement: str) -> str:
    return " ".join(statement.split())[:90]


async def profile_table(
    total: int, scope_rows: int, runs: int, owner_url: str, app_url: str
) -> dict[str, Any]:
    import uuid

    from pyinstrument import Profiler

    tenant = uuid.UUID(TENANT)
    scopes = [DataScope(tenant, f"user-{i:03d}", scope_rows) for i in range(total // scope_rows)]
    await bulk_load(to_asyncpg_dsn(owner_url), scopes, TextGenerator(), HashEmbedder())
    embedder, settings = HashEmbedder(), Settings(embedder="hash")
    queries = [TextGenerator(seed=21).query() for _ in range(runs)]
    target = scopes[0]
    engine = create_engine(app_url, pool_size=2, max_overflow=0)
    captured = Captured(engine)
    service = InProcess(engine, settings, embedder)
    service.reinforcements.start()
    out: dict[str, Any] = {"table_rows": total, "scope_rows": scope_rows, "load_average": os.getloadavg()[0]}
    try:
        # The candidate statement alone: captured, then explained with the same parameters.
        execution, planning, client = [], [], []
        plan_text = ""
        for q in queries:
            async with service.maker() as session, session.begin():
                await set_tenant(session, TenantId(tenant))
                scope = Scope(TenantId(tenant), target.user_id, None, Reach.WITH_GLOBAL)
                cq = CandidateQuery(
                    scope, embedder.embed_text(q), embedder.name, or_tsquery(q), settings.candidate_k,
                    SystemClock().now(), settings.keyword_max_matches,
                )  # fmt: skip
                captured.statements.clear()
                await RecallStore(session, TenantId(tenant)).candidates(cq, dim=embedder.dim, use_index=False)
                statement, params, wall = captured.statements[-1]
                client.append(wall)
                conn = await session.connection()
                rows = (await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS) {statement}", params)).all()
                plan_text = "\n".join(r[0] for r in rows)
                execution.append(float(EXECUTION.search(plan_text).group(1)))  # type: ignore[union-attr]
                planning.append(float(PLANNING.search(plan_text).group(1)))  # type: ignore[union-attr]
        out["candidate_statement"] = {
            "execution_ms_p50": round(statistics.median(execution[3:]), 3),
            "planning_ms_p50": round(statistics.median(planning[3:]), 3),
            "client_wall_ms_p50": round(statistics.median(client[3:]), 3),
            "plan": plan_text,
        }
        # A whole recall: every statement it sends with its wall time, and the recall's own total.
        per_statement: dict[str, list[float]] = {}
        totals = []
        for q in queries:
            captured.statements.clear()
            totals.append(await service.recall(Probe(target, q)))
            for statement, _, wall in captured.statements:
                per_statement.setdefault(first_line(statement), []).append(wall)
        out["recall_ms_p50"] = round(statistics.median(totals[3:]), 3)
        out["statements_per_recall"] = {k: {"count_per_recall": len(v) / len(queries),
                                            "wall_ms_p50": round(statistics.median(v), 3)}
                                        for k, v in per_statement.items()}  # fmt: skip
        profiler = Profiler(interval=0.0005, async_mode="enabled")
        profiler.start()
        for q in queries:
            await service.recall(Probe(target, q))
        profiler.stop()
        out["pyinstrument"] = profiler.output_text(unicode=False, color=False, show_all=False)
    finally:
        await service.reinforcements.stop()
        await engine.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tables", default="2000,10000")
    parser.add_argument("--scope", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    results = []
    for total in [int(t) for t in args.tables.split(",") if t]:
        with bench_database() as (owner_url, app_url):
            results.append(asyncio.run(profile_table(total, args.scope, args.runs, owner_url, app_url)))
    lines = []
    for r in results:
        c = r["candidate_statement"]
        lines += [
            f"## {r['table_rows']} rows, a {r['scope_rows']}-row user (load average {r['load_average']:.1f})",
            "",
            f"candidate statement: execution {c['execution_ms_p50']} ms, planning {c['planning_ms_p50']} ms, "
            f"client wall {c['client_wall_ms_p50']} ms (p50); whole recall p50 {r['recall_ms_p50']} ms",
            "",
            "| statement | per recall | wall p50 ms |",
            "|---|---|---|",
            *(
                f"| `{k}` | {v['count_per_recall']:g} | {v['wall_ms_p50']} |"
                for k, v in r["statements_per_recall"].items()
            ),
            "",
            "```",
            c["plan"],
            "```",
            "",
            "```",
            r["pyinstrument"],
            "```",
            "",
        ]
    markdown = "\n".join(lines)
    write_results("peers-sql", {"tables": results}, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
