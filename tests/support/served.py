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
from tests.support.logsink import read_log_files


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
    with logged_process([sys.executable, "-m", "app", "serve", *args], env, tmp_path) as process:
        yield process


@contextmanager
def logged_process(
    command: list[str], env: dict[str, str], tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` with its stdout and stderr in tmp_path/stdout and tmp_path/stderr; SIGTERM on exit.
    Once it has stopped, both files go to the suite's log checker (tests/support/logsink.py), which
    fails the run if a line carries SQL or stored content, as it does for the tests' own output."""
    paths = tmp_path / "stdout", tmp_path / "stderr"
    out, err = paths[0].open("wb"), paths[1].open("wb")
    process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        out.close()
        err.close()
        read_log_files(*paths)


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
