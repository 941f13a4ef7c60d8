"""`engram serve` as a user runs it: the port, the workers, and what it writes to its streams."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.database import TestDatabase
from tests.support.served import free_port, serve_env, serving, wait_ready


def test_a_busy_port_fails_at_once_without_claiming_to_listen(database: TestDatabase, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "app", "serve", "--port", str(port)],
            env=serve_env(database, tmp_path, ENGRAM_EMBEDDER="hash"),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert "listening" not in done.stdout.lower()


def test_two_workers_serve_one_port_and_write_only_json_lines(database: TestDatabase, tmp_path: Path) -> None:
    port = free_port()
    # The local model: loading it is what printed progress bars and library lines before.
    env = serve_env(database, tmp_path, ENGRAM_EMBEDDER="local")
    with serving(["--port", str(port), "--workers", "2"], env, tmp_path) as process:
        wait_ready(port, process)
        workers = subprocess.run(
            ["pgrep", "-P", str(process.pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        for _ in range(40):
            assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        index = httpx.get(f"http://127.0.0.1:{port}/", timeout=5).json()
    assert process.returncode == 0
    assert len(workers) >= 2  # two workers (plus, possibly, the spawn helper)
    health = sum(
        s.value
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
        if s.name == "engram_http_requests_total" and s.labels["route"] == "/health"
    )
    assert health == 40  # counted by whichever worker served them, summed across both
    assert index["links"]["openapi"] == "/schema/openapi.json"

    stdout = (tmp_path / "stdout").read_text()
    assert f"listening on http://127.0.0.1:{port} with 2 worker(s)" in stdout
    lines = [line for line in (tmp_path / "stderr").read_text().splitlines() if line.strip()]
    assert lines, "the service logged nothing"
    for line in lines:
        record = json.loads(line)  # every line is JSON: no progress bar, no library-formatted line
        assert "event" in record
        assert "level" in record
    assert any(json.loads(line).get("logger", "").startswith("sentence_transformers") for line in lines)


def test_workers_stop_when_their_supervisor_is_killed(database: TestDatabase, tmp_path: Path) -> None:
    port = free_port()
    env = serve_env(database, tmp_path, ENGRAM_EMBEDDER="hash")
    with serving(["--port", str(port), "--workers", "2"], env, tmp_path) as process:
        wait_ready(port, process)
        workers = [
            int(pid)
            for pid in subprocess.run(
                ["pgrep", "-P", str(process.pid)], capture_output=True, text=True, check=False
            ).stdout.split()
        ]
        assert workers
        process.kill()  # SIGKILL: the supervisor cannot stop its workers itself
        process.wait(timeout=30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.2)
    orphans = [pid for pid in workers if _alive(pid)]
    for pid in orphans:  # leave nothing running whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert not orphans, "orphaned workers kept running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")  # a zombie is gone
