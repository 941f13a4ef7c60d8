"""The app served by uvicorn on loopback, inside the test's own event loop (requests that really overlap).

Litestar's test client hands each request to the app in another thread and waits for it, so requests
sent "concurrently" through it run one after another. Races, concurrency caps and fairness need
requests that really overlap: this serves the app over real HTTP, where they do.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import uvicorn
from litestar import Litestar


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def served(app: Litestar) -> AsyncIterator[httpx.AsyncClient]:
    """A client of `app` served on 127.0.0.1 until the block ends."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, lifespan="on", access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.01)
        if not server.started:
            raise RuntimeError("uvicorn did not start")
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=60
        ) as client:
            yield client
    finally:
        server.should_exit = True
        await task
