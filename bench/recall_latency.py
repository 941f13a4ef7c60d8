"""First recall latency figures: one user with N memories (hash embedder), in-process and over HTTP.

    python -m bench.recall_latency [--memories 10000] [--queries 300]

In-process calls the service as the served app builds it (one transaction per recall, tenant bound,
spare reads, reinforcement in the background); HTTP goes through uvicorn on loopback with a real API
key. Results go to bench/results/recall-latency/.
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
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import async_sessionmaker
from tqdm import tqdm

from app.context import RequestContext
from app.db.session import create_engine, set_tenant
from app.embeddings.hashing import HashEmbedder
from app.lib.clock import SystemClock
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.memory.models import RememberInput
from app.memory.service import MemoryService
from app.tenancy import admin
from app.tenancy.types import TenantId
from bench.common import bench_database, machine, percentiles, write_results
from bench.perf.data import Scope
from bench.perf.measure import Probe, served

TOPICS = [
    "deploy",
    "kubernetes",
    "cluster",
    "staging",
    "production",
    "rollout",
    "canary",
    "database",
    "postgres",
    "index",
    "vacuum",
    "coffee",
    "tea",
    "breakfast",
    "lunch",
    "dinner",
    "vegan",
    "budget",
    "travel",
    "flight",
    "hotel",
    "lisbon",
    "berlin",
    "tokyo",
    "python",
    "rust",
    "typescript",
    "react",
    "nextjs",
    "vite",
    "editor",
    "vim",
    "theme",
    "dark",
    "light",
    "meeting",
    "standup",
    "review",
    "deadline",
    "invoice",
    "customer",
    "support",
    "ticket",
    "backlog",
    "sprint",
    "retro",
    "music",
    "jazz",
    "running",
]
TYPES = ("fact", "preference", "decision", "episodic", "task", "constraint")


def sentence(rng: random.Random) -> str:
    words = [rng.choice(TOPICS) for _ in range(rng.randint(6, 30))]
    return "The user mentioned " + " ".join(words) + f" (ref {rng.randint(1, 10**6)})."


async def seed(app_url: str, owner_url: str, n: int) -> tuple[TenantId, str]:
    owner = create_engine(owner_url, pool_size=1, max_overflow=0)
    async with async_sessionmaker(owner)() as s, s.begin():
        created = await admin.create_tenant(s, f"bench-{random.randint(0, 10**9)}")
    await owner.dispose()
    engine = create_engine(app_url)
    rng = random.Random(42)
    settings = Settings(embedder="hash")
    embedder = HashEmbedder()
    with tqdm(total=n, desc="seeding", unit="mem") as bar:
        for start in range(0, n, 500):
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                await set_tenant(session, created.tenant_id)
                service = _service(session, created.tenant_id, settings, embedder)
                items = [
                    RememberInput(user_id="bench-user", content=sentence(rng), type=rng.choice(TYPES))
                    for _ in range(min(500, n - start))
                ]
                await service.remember_many(items)
            bar.update(len(items))
    await engine.dispose()
    return created.tenant_id, created.plaintext


def _service(session: Any, tenant: TenantId, settings: Settings, embedder: HashEmbedder) -> MemoryService:
    ctx = RequestContext.build(
        session,
        tenant,
        "bench",
        embedder=embedder,
        settings=settings,
        clock=SystemClock(),
        counter=TokenCounter(),
    )
    return MemoryService(ctx)


async def in_process(app_url: str, tenant: TenantId, queries: list[str], memories: int) -> list[float]:
    settings = Settings(embedder="hash")
    scope = Scope(tenant, "bench-user", memories)
    samples = []
    async with served(app_url, settings, HashEmbedder(), settings.db_pool_size) as service:
        for i, query in enumerate(tqdm(queries, desc="in-process recall")):
            elapsed = await service.recall(Probe(scope, query))
            if i >= 20:  # warm-up excluded
                samples.append(elapsed)
    return samples


def over_http(owner_url: str, app_url: str, key: str, queries: list[str]) -> list[float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = os.environ | {"DATABASE_URL": owner_url, "APP_DATABASE_URL": app_url, "ENGRAM_EMBEDDER": "hash"}
    env["ENGRAM_LOG_LEVEL"] = "WARNING"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "app.asgi:app_factory",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        samples = []
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            for i, query in enumerate(tqdm(queries, desc="HTTP recall")):
                started = time.perf_counter()
                response = client.post("/v1/recall", json={"user_id": "bench-user", "query": query})
                elapsed = (time.perf_counter() - started) * 1000
                response.raise_for_status()
                if i >= 20:
                    samples.append(elapsed)
        return samples
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(7)
    queries = [
        " ".join(rng.choice(TOPICS) for _ in range(rng.randint(2, 8))) for _ in range(args.queries + 20)
    ]
    with bench_database() as (owner_url, app_url):
        tenant, key = asyncio.run(seed(app_url, owner_url, args.memories))
        local = percentiles(asyncio.run(in_process(app_url, tenant, queries, args.memories)))
        http = percentiles(over_http(owner_url, app_url, key, queries))
    payload = {"memories": args.memories, "embedder": "hash-v1-384", "in_process_ms": local, "http_ms": http}
    payload["machine"] = machine()
    markdown = (
        f"Recall latency, one user with {args.memories} memories, hash embedder, budget 1024\n\n"
        "| path | n | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|\n"
        f"| in-process | {local['n']} | {local['p50']} | {local['p95']} | {local['p99']} |\n"
        f"| HTTP (uvicorn, loopback) | {http['n']} | {http['p50']} | {http['p95']} | {http['p99']} |\n"
    )
    out = write_results("recall-latency", payload, markdown)
    print(markdown)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
