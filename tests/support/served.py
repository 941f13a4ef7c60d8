"""`engram serve` in a subprocess on a free loopback port, against the session's test database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.database import TestDatabase


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def serve_env(database: TestDatabase, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "PROMETHEUS_"))}
    env.update(
        DATABASE_URL=database.owner_url,
        APP_DATABASE_URL=database.app_url,
        ENGRAM_DATA_DIR=str(tmp_path / "data"),
        **extra,
    )
    return env


@contextmanager
def serving(args: list[str], env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The server's stdout and stderr go to tmp_path/stdout and tmp_path/stderr; SIGTERM on exit."""
    out, err = (tmp_path / "stdout").open("wb"), (tmp_path / "stderr").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "app", "serve", *args], env=env, stdout=out, stderr=err)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        out.close()
        err.close()


def wait_ready(port: int, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError("the server never became ready")
