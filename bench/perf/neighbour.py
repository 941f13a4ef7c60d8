"""Noisy neighbour: tenant A's recall p95 idle, and while tenant B saturates writes, with the fairness
mechanism on (`ENGRAM_WORKER_SLOTS`, the default 4, app/lib/fairness.py) and off (0), in one run.

    python -m bench.perf --neighbour-only [--writers 48] [--neighbour-queries 150]

One service process (uvicorn, the shipped pool of 10), a fresh database: A has one user with 2,000
memories, B one user it writes into. For each setting: A sends recalls one after another (idle), then
B's writers send remembers back to back while A sends the same recalls again. The ratio is A's p95
under load over A's p95 idle (target: at most 3). Rate limits are lifted (0) so B's writers measure the
worker's fairness, not its bucket.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx

from bench.common import percentiles
from bench.perf.data import Scope, TextGenerator, bulk_load
from bench.perf.http import load, serve

DEFAULT_SLOTS = (4, 0)  # the shipped default, and no cap


def _label(slots: int) -> str:
    return f"{slots} worker slots" if slots else "no cap (fairness off)"


async def _recalls(base: str, key: str, scope: Scope, queries: list[str]) -> list[float]:
    latencies = []
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:
        for query in queries:
            started = time.perf_counter()
            response = await client.post("/v1/recall", json={"user_id": scope.user_id, "query": query})
            response.raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)
    return latencies[5:]  # the first few warm the connection and the caches


async def noisy_neighbour_section(
    owner_url: str,
    app_url: str,
    keys: dict[Any, str],
    a: Scope,
    b: Scope,
    writers: int,
    queries: int,
    slot_settings: tuple[int, ...] = DEFAULT_SLOTS,
) -> dict[str, Any]:
    text = TextGenerator(seed=77)
    probe_queries = [text.query() for _ in range(queries)]
    out: dict[str, Any] = {"writers": writers, "a_scope_rows": a.size, "settings": list(slot_settings)}
    for slots in slot_settings:
        label = _label(slots)
        env = {"ENGRAM_WORKER_SLOTS": str(slots), "ENGRAM_TENANT_REQUESTS_PER_MINUTE": "0"}
        with serve(owner_url, app_url, extra_env=env) as server:
            idle = await _recalls(server.base, keys[a.tenant], a, probe_queries)

            def write(i: int) -> tuple[str, dict[str, Any]]:
                return "/v1/memories", {"user_id": b.user_id, "content": f"{text.sentence()} #{i}"}

            # B's load outlasts A's probes: start it, let it saturate, measure A, then let it finish.
            seconds = max(20.0, len(probe_queries) * 0.15)
            load_task = asyncio.create_task(load(server.base, keys[b.tenant], writers, seconds, write))
            await asyncio.sleep(2.0)
            loaded = await _recalls(server.base, keys[a.tenant], a, probe_queries)
            b_result = await load_task
        idle_p, loaded_p = percentiles(idle), percentiles(loaded)
        out[label] = {
            "a_idle_ms": idle_p,
            "a_loaded_ms": loaded_p,
            "p95_ratio": round(loaded_p["p95"] / idle_p["p95"], 2),
            "b_writes_per_s": round(b_result.rps, 1),
            "b_errors": b_result.error_kinds,
        }
    return out


def neighbour_scopes() -> tuple[Scope, Scope]:
    """Two tenants (random ids: their names are made of the ids' first hex digits)."""
    return Scope(uuid.uuid4(), "user-a", 2000), Scope(uuid.uuid4(), "user-b", 1)


async def run(
    owner_url: str, app_url: str, writers: int, queries: int, slot_settings: tuple[int, ...] = DEFAULT_SLOTS
) -> dict[str, Any]:
    from app.db.urls import to_asyncpg_dsn
    from app.embeddings.hashing import HashEmbedder
    from bench.perf.__main__ import make_keys

    a, b = neighbour_scopes()
    await bulk_load(to_asyncpg_dsn(owner_url), [a, b], TextGenerator(), HashEmbedder())
    keys = await make_keys(owner_url, {a.tenant, b.tenant})
    return await noisy_neighbour_section(owner_url, app_url, keys, a, b, writers, queries, slot_settings)


def render(result: dict[str, Any]) -> str:
    lines = [
        f"Noisy neighbour: tenant A's recall while tenant B runs {result['writers']} writers "
        f"(A's scope: {result['a_scope_rows']} rows)",
        "",
        "| setting | A idle p50 / p95 ms | A under B's load p50 / p95 ms | p95 ratio | B writes/s | B errors |",
        "|---|---|---|---|---|---|",
    ]
    for slots in result["settings"]:
        label = _label(slots)
        r = result[label]
        lines.append(
            f"| {label} | {r['a_idle_ms']['p50']} / {r['a_idle_ms']['p95']} | "
            f"{r['a_loaded_ms']['p50']} / {r['a_loaded_ms']['p95']} | {r['p95_ratio']}x | "
            f"{r['b_writes_per_s']} | {r['b_errors'] or 0} |"
        )
    return "\n".join(lines)
