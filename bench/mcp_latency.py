"""A recall over MCP's streamable HTTP against the same recall over REST, on the same data.

    python -m bench.mcp_latency [--memories 10000] [--queries 300]

One user with N memories (hash embedder), the app served by uvicorn on loopback (the ASGI factory,
as `engram serve` builds it), one API key. Each query is sent both ways back to back, sequentially,
the order alternating (REST first on even queries, MCP first on odd ones), so that load from anything
else on the machine falls on both alike. REST is `POST /v1/recall` with httpx; MCP is a `recall` tool
call through the official SDK's client (one session for the run; stateless server, JSON responses).
The first 20 of each are warm-up. Reports p50/p95 of both and the ratios; results go to
bench/results/mcp-latency/.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tqdm import tqdm

from bench.common import bench_database, machine, percentiles, write_results
from bench.recall_latency import TOPICS, seed

WARM_UP = 20
USER = "bench-user"


def start_server(owner_url: str, app_url: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = os.environ | {"DATABASE_URL": owner_url, "APP_DATABASE_URL": app_url, "ENGRAM_EMBEDDER": "hash"}
    env["ENGRAM_LOG_LEVEL"] = "WARNING"
    command = [sys.executable, "-m", "uvicorn", "--factory", "app.asgi:app_factory", "--port", str(port)]
    server = subprocess.Popen([*command, "--log-level", "warning"], env=env)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    return server, base


async def _timed(call: Callable[[str], Awaitable[None]], query: str) -> float:
    started = time.perf_counter()
    await call(query)
    return (time.perf_counter() - started) * 1000


async def measure(base: str, key: str, queries: list[str]) -> tuple[list[float], list[float]]:
    headers = {"Authorization": f"Bearer {key}"}
    rest_ms: list[float] = []
    mcp_ms: list[float] = []
    async with (
        httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as rest,
        httpx2.AsyncClient(headers={**headers, "X-Engram-User": USER}, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as mcp,
    ):

        async def by_rest(query: str) -> None:
            response = await rest.post("/v1/recall", json={"user_id": USER, "query": query})
            response.raise_for_status()

        async def by_mcp(query: str) -> None:
            result = await mcp.call_tool("recall", {"query": query})
            if result.is_error:
                raise RuntimeError(f"recall over MCP failed: {result.structured_content}")

        for i, query in enumerate(tqdm(queries, desc="recall, REST and MCP interleaved")):
            pair: list[tuple[list[float], Callable[[str], Awaitable[None]]]] = [
                (rest_ms, by_rest),
                (mcp_ms, by_mcp),
            ]
            for samples, call in pair if i % 2 == 0 else reversed(pair):
                elapsed = await _timed(call, query)
                if i >= WARM_UP:
                    samples.append(elapsed)
    return rest_ms, mcp_ms


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(7)
    queries = [
        " ".join(rng.choice(TOPICS) for _ in range(rng.randint(2, 8))) for _ in range(args.queries + WARM_UP)
    ]
    with bench_database() as (owner_url, app_url):
        _, key = asyncio.run(seed(app_url, owner_url, args.memories))
        server, base = start_server(owner_url, app_url)
        try:
            rest_ms, mcp_ms = asyncio.run(measure(base, key, queries))
        finally:
            server.terminate()
            server.wait(timeout=30)
    rest, mcp = percentiles(rest_ms), percentiles(mcp_ms)
    ratio = {q: round(mcp[q] / rest[q], 2) for q in ("p50", "p95", "mean")}
    payload: dict[str, Any] = {
        "memories": args.memories,
        "embedder": "hash-v1-384",
        "rest_ms": rest,
        "mcp_ms": mcp,
        "mcp_over_rest": ratio,
        "machine": machine(),
        "load_average": os.getloadavg(),
    }
    markdown = (
        f"Recall over MCP (streamable HTTP) and REST, one user with {args.memories} memories, hash embedder, "
        "budget 1024, sequential, interleaved, uvicorn on loopback\n\n"
        "| path | n | p50 ms | p95 ms | mean ms |\n|---|---|---|---|---|\n"
        f"| REST `POST /v1/recall` | {rest['n']} | {rest['p50']} | {rest['p95']} | {rest['mean']} |\n"
        f"| MCP `recall` tool at `/mcp` | {mcp['n']} | {mcp['p50']} | {mcp['p95']} | {mcp['mean']} |\n"
        f"| MCP / REST | | {ratio['p50']}x | {ratio['p95']}x | {ratio['mean']}x |\n\n"
        f"load average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    out = write_results("mcp-latency", payload, markdown)
    print(markdown)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
