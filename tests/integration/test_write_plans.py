"""The write path's nearest-memory statement reads its scope once, whatever the planner estimates.

A user whose memories grow faster than the table's statistics are refreshed (a new tenant writing
hundreds of memories in a minute) gets estimates of about one row. The statement once joined its lateral
nearest-neighbour search to `memories`, and on such estimates the planner ran the search once per row of
the tenant: 394 rows cost 265 ms instead of 0.3, and a tenant writing in bulk saturated the database's
CPU for every other tenant (the noisy-neighbour line of `bench.perf`). The search is now materialised and
its rows fetched by primary key; this test runs the statement the service sends under EXPLAIN ANALYZE
and counts the rows every scan of `memories` read (before the fix, 602 for this 301-row scope: the
tenant's rows were scanned again to join them, where the bench's plan scanned them once per row).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.memory.lookups import NEAR_K
from tests.conftest import Api

SCOPE_ROWS = 300


def _scans_of_memories(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    if plan.get("Relation Name") == "memories":
        found.append(plan)
    for child in plan.get("Plans", []):
        found.extend(_scans_of_memories(child))
    return found


async def test_nearest_lookup_reads_the_scope_once_on_stale_estimates(
    api: Api, app_engine: AsyncEngine
) -> None:
    items = [
        {"user_id": "bulk", "content": f"Bulk note {i}: the crate holds {i} parts"} for i in range(SCOPE_ROWS)
    ]
    response = await api.post("/v1/memories/batch", {"items": items})
    assert response.status_code == 201, response.text

    engine: AsyncEngine = api.client.app.state.engine  # type: ignore[attr-defined]
    captured: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        if "CROSS JOIN LATERAL" in statement and "<=>" in statement:
            captured.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        await api.remember(user_id="bulk", content="A note on something else entirely: the van is blue")
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert len(captured) == 1, "the remember sent no nearest-memory lookup"
    statement, parameters = captured[0]

    async with app_engine.connect() as conn, conn.begin():  # the service's role, under RLS
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        # The estimates the bulk write left behind: a planner that trusts them must still scan once.
        await conn.execute(text("SET LOCAL enable_seqscan = off"))
        result = await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", parameters)
        raw = result.scalar_one()
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    scans = _scans_of_memories(plan)
    assert scans, plan
    rows_read = sum(int(s["Actual Rows"]) * int(s["Actual Loops"]) for s in scans)
    # The scope once for the search, plus the NEAR_K rows fetched by key (and their index probes).
    assert rows_read <= SCOPE_ROWS + 10 + 4 * NEAR_K, (
        rows_read,
        [(s["Node Type"], s["Actual Loops"]) for s in scans],
    )
