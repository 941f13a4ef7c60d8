"""The service over HTTP: a uvicorn subprocess on loopback, sequential probes and concurrent load."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil


@dataclass
class Server:
    base: str
    process: subprocess.Popen[bytes]
    peak_rss: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample_rss(self) -> None:
        proc = psutil.Process(self.process.pid)
        while not self._stop.is_set():
            try:  # granian serves from worker processes: count the whole process tree
                tree = [proc, *proc.children(recursive=True)]
                self.peak_rss = max(self.peak_rss, sum(p.memory_info().rss for p in tree))
            except psutil.Error:
                return
            time.sleep(0.1)


@contextmanager
def serve(
    owner_url: str,
    app_url: str,
    extra_env: dict[str, str] | None = None,
    server: str = "uvicorn",
    startup_s: float = 30.0,
) -> Iterator[Server]:
    """The app factory under uvicorn or granian; one worker, like a single replica. Waits up to
    `startup_s` for /health (loading a local model on a busy machine takes longer than the default)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = os.environ | {"DATABASE_URL": owner_url, "APP_DATABASE_URL": app_url, "ENGRAM_EMBEDDER": "hash"}
    env |= {"ENGRAM_LOG_LEVEL": "WARNING"}  # the service's own pool settings, as shipped
    # One tenant takes every load request here: its request bucket lifted, throughput is what is measured.
    env |= {"ENGRAM_TENANT_REQUESTS_PER_MINUTE": "0"}
    env |= extra_env or {}
    if server == "granian":
        granian = str(Path(sys.executable).with_name("granian"))
        cmd = [
            granian,
            "--interface",
            "asgi",
            "--factory",
            "--port",
            str(port),
            "--no-log",
            "app.asgi:app_factory",
        ]
    else:
        cmd = [sys.executable, "-m", "uvicorn", "--factory", "app.asgi:app_factory", "--port", str(port)]
        cmd += ["--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(cmd, env=env)
    running = Server(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{running.base}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    sampler = threading.Thread(target=running.sample_rss, daemon=True)
    sampler.start()
    try:
        yield running
    finally:
        running._stop.set()
        process.terminate()
        process.wait(timeout=30)


@dataclass
class LoadResult:
    clients: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]
    error_kinds: dict[str, int] = field(default_factory=dict)  # status code or exception class: count

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


async def load(
    base: str,
    key: str,
    clients: int,
    seconds: float,
    make_request: Callable[[int], tuple[str, dict[str, Any]]],
) -> LoadResult:
    """`clients` workers send requests back to back for `seconds`; non-2xx and transport errors count."""
    latencies: list[float] = []
    kinds: Counter[str] = Counter()
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as client:

        async def worker(worker_id: int) -> None:
            i = 0
            while time.perf_counter() < deadline:
                path, body = make_request(worker_id * 1_000_000 + i)
                started = time.perf_counter()
                try:
                    response = await client.post(path, json=body)
                    if response.status_code >= 300:
                        kinds[str(response.status_code)] += 1
                except httpx.HTTPError as exc:
                    kinds[type(exc).__name__] += 1
                latencies.append((time.perf_counter() - started) * 1000)
                i += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(clients)))
        elapsed = time.perf_counter() - started
    return LoadResult(clients, len(latencies), sum(kinds.values()), elapsed, latencies, dict(kinds))
