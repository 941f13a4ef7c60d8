"""An ASGI app served by uvicorn on 127.0.0.1 (an ephemeral port) in a background thread.

A browser needs a real socket: this serves the real app, lifespan included, with its own event loop.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

import uvicorn


class LiveServer:
    def __init__(self, app: Any, *, lifespan: str = "on", name: str = "live-server") -> None:
        self.app = app
        self.lifespan = lifespan
        self.name = name
        self.port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind a port, serve in a daemon thread; returns once the server accepts connections."""
        # Binding the socket here gives the port before the server thread runs.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            interface="asgi3",
            lifespan=self.lifespan,
            log_level="warning",
            access_log=False,
            http="h11",
            loop="asyncio",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True, name=self.name
        )
        self._thread.start()
        deadline = time.monotonic() + 60.0  # a loaded 2-core machine starts slowly
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} failed to start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15.0)
            if self._thread.is_alive():
                raise RuntimeError(f"{self.name} did not stop within 15 s")
        self._server = self._thread = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError(f"{self.name} not started")
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serve `app` until the block ends; yields its base URL (`http://127.0.0.1:<port>`)."""
    with LiveServer(app) as server:
        yield server.url
