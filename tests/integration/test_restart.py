"""Acknowledged writes survive a restart of the service and of its embedded database."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_service(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "APP_DATABASE_URL"}}
    env |= {"ENGRAM_DATA_DIR": str(data_dir), "ENGRAM_EMBEDDER": "hash"}
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise AssertionError(process.stdout.read().decode() if process.stdout else "service exited")
        time.sleep(0.2)
    process.kill()
    raise AssertionError("service did not become ready")


def stop_service(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def postmaster_running(data_dir: Path) -> bool:
    pid_file = data_dir / "pg" / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().splitlines()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_memories_survive_restart_of_service_and_embedded_database(tmp_path: Path) -> None:
    data_dir = tmp_path / "engram"
    port = free_port()
    service = start_service(data_dir, port)
    try:
        key_file = data_dir / "dev-api-key"
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        headers = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
        created = httpx.post(
            f"http://127.0.0.1:{port}/v1/memories",
            json={
                "user_id": "u",
                "content": "The release train leaves on Thursdays",
                "subject": "release day",
            },
            headers=headers,
            timeout=60,  # a first request on a loaded machine can take longer than httpx's 5 s default
        )
        assert created.status_code == 201
    finally:
        stop_service(service)
    assert not postmaster_running(data_dir)  # the embedded database stopped with the service

    port = free_port()
    service = start_service(data_dir, port)
    try:
        assert postmaster_running(data_dir)
        recall = httpx.post(
            f"http://127.0.0.1:{port}/v1/recall",
            json={"user_id": "u", "query": "when does the release train leave?"},
            headers=headers,
            timeout=60,
        )
        assert recall.status_code == 200
        assert "Thursdays" in recall.json()["context"]
        # The development tenant is created once, not on every start.
        assert key_file.read_text().strip() == headers["Authorization"].split()[1]
    finally:
        stop_service(service)


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data directory whose database is stopped at the end whatever the test left running."""
    path = tmp_path / "engram"
    yield path
    if postmaster_running(path):
        os.kill(postmaster_pid(path), signal.SIGTERM)  # "smart" shutdown of a server nobody holds


def handle_pids(data_dir: Path) -> list[int]:
    pids: list[int] = json.loads((data_dir / "pg" / ".handle_pids.json").read_text())
    return pids


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pg" / "postmaster.pid").read_text().splitlines()[0])


def test_a_service_killed_with_sigkill_leaves_no_handle_that_outlives_the_next_graceful_stop(
    data_dir: Path,
) -> None:
    service = start_service(data_dir, free_port())
    service.kill()  # SIGKILL: no shutdown hook runs, the database is left running with the dead id
    service.wait(timeout=30)
    assert postmaster_running(data_dir)
    assert service.pid in handle_pids(data_dir)

    service = start_service(data_dir, free_port())  # attaches to the running server
    try:
        assert handle_pids(data_dir) == [service.pid]  # the dead id was dropped
    finally:
        stop_service(service)
    assert not postmaster_running(data_dir)  # the graceful stop stopped the database


def test_a_database_killed_with_sigkill_is_started_again_by_the_next_service(data_dir: Path) -> None:
    port = free_port()
    service = start_service(data_dir, port)
    headers = {"Authorization": f"Bearer {(data_dir / 'dev-api-key').read_text().strip()}"}
    body = {"user_id": "u", "content": "The backup runs at 02:00 UTC", "subject": "backup time"}
    assert httpx.post(f"http://127.0.0.1:{port}/v1/memories", json=body, headers=headers).status_code == 201
    os.kill(postmaster_pid(data_dir), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while postmaster_running(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not postmaster_running(data_dir)
    service.kill()  # the service has lost its database; both processes are gone now
    service.wait(timeout=30)

    port = free_port()
    service = start_service(data_dir, port)
    try:
        assert postmaster_running(data_dir)
        recall = httpx.post(
            f"http://127.0.0.1:{port}/v1/recall",
            json={"user_id": "u", "query": "when does the backup run?"},
            headers=headers,
        )
        assert recall.status_code == 200, recall.text
        assert "02:00" in recall.json()["context"]  # the acknowledged write survived the kill
    finally:
        stop_service(service)
    assert not postmaster_running(data_dir)
