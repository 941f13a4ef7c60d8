"""Defects of issue 23 that had no test: slow-header connections, unlogged 404/405, `q` without words."""

from __future__ import annotations

import io
import json
import socket
import sys
import time
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import Api
from tests.support.database import TestDatabase
from tests.support.served import free_port, serve_env, serving, wait_ready

USER = "gaps-user"


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed `sock` (EOF or reset), None if it stayed open that long."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while True:
            if sock.recv(4096) == b"":
                return time.monotonic() - started
    except TimeoutError:
        return None
    except ConnectionResetError:
        return time.monotonic() - started


def test_a_slow_header_connection_is_closed_and_a_prompt_one_is_served(
    database: TestDatabase, tmp_path: Path
) -> None:
    port = free_port()
    env = serve_env(database, tmp_path, ENGRAM_HEADER_TIMEOUT_S="1.5", ENGRAM_EMBEDDER="hash")
    with serving(["--port", str(port), "--workers", "1"], env, tmp_path) as process:
        wait_ready(port, process)
        # Never finishes its head: closed after the timeout.
        silent = socket.create_connection(("127.0.0.1", port))
        silent.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        # Drips a byte every 0.3 s (each byte used to reset nothing and keep it open forever).
        dripping = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        dripped_closed = None
        for byte in b"GET /health HTTP/1.1\r\nX-Slow: " + b"a" * 40:
            try:
                dripping.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                dripped_closed = time.monotonic() - started
                break
            time.sleep(0.3)
        if dripped_closed is None:
            dripped_closed = closed_within(dripping, 0.5)
            dripped_closed = None if dripped_closed is None else time.monotonic() - started
        silent_closed = closed_within(silent, 5)
        # A prompt request on a kept-alive connection is served; its idle successor head is cut too.
        prompt = socket.create_connection(("127.0.0.1", port))
        prompt.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        prompt.settimeout(5)
        first = prompt.recv(4096)
        prompt.sendall(b"GET /health HTTP/1.1\r\n")
        prompt_closed = closed_within(prompt, 5)
        for s in (silent, dripping, prompt):
            s.close()
    assert first.startswith(b"HTTP/1.1 200")
    assert silent_closed is not None
    assert dripped_closed is not None
    assert dripped_closed < 4
    assert prompt_closed is not None


async def test_404_and_405_are_logged_without_content(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = io.StringIO()
    monkeypatch.setattr(sys, "stderr", sink)
    app = create_app(settings)  # configures logging onto the sink
    async with AsyncTestClient(app=app) as client:
        missing = await client.get("/wp-admin/setup.php", params={"secret": "query-value-9d2"})
        wrong_method = await client.put("/health", content=b'{"body": "body-value-4c1"}')
    assert (missing.status_code, wrong_method.status_code) == (404, 405)
    lines = [json.loads(line) for line in sink.getvalue().splitlines() if line.startswith("{")]
    requests = [line for line in lines if line.get("event") == "request"]
    assert {(r["method"], r["path"], r["status"]) for r in requests} >= {
        ("GET", "/wp-admin/setup.php", 404),
        ("PUT", "/health", 405),
    }
    rendered = sink.getvalue()
    assert "query-value-9d2" not in rendered
    assert "body-value-4c1" not in rendered


async def test_routed_requests_are_logged_once(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    sink = io.StringIO()
    monkeypatch.setattr(sys, "stderr", sink)
    app = create_app(settings)
    async with AsyncTestClient(app=app) as client:
        assert (await client.get("/health")).status_code == 200
    lines = [json.loads(line) for line in sink.getvalue().splitlines() if line.startswith("{")]
    assert [line["route"] for line in lines if line.get("event") == "request"] == ["/health"]


@pytest.mark.parametrize("q", ["%", "_", "%%", "\\"])
async def test_a_q_without_words_matches_its_characters_literally(api: Api, q: str) -> None:
    await api.remember(user_id=USER, content="I drink green tea every morning")
    literal = await api.remember(user_id=USER, content=f"the discount code ends in {q}")
    response = await api.get("/v1/memories", user_id=USER, q=q)
    assert response.status_code == 200, response.text
    assert [m["id"] for m in response.json()["items"]] == [literal["memory"]["id"]]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/memories", {"user_id": USER, "content": "x", "type": "correct-horse-battery-staple-91"}),
        ("/v1/memories", {"user_id": USER, "content": "x", "correct-horse-battery-staple-91": 1}),
        ("/v1/recall", {"user_id": USER, "query": "q", "types": ["correct-horse-battery-staple-91"]}),
    ],
)
async def test_a_refused_value_is_never_echoed_in_the_422(
    api: Api, path: str, body: dict[str, object]
) -> None:
    response = await api.post(path, body)
    assert response.status_code == 422, response.text
    assert "battery-staple-91" not in response.text
    assert response.json()["error"] == "validation_error"


async def test_a_refused_query_value_is_never_echoed(api: Api) -> None:
    response = await api.get("/v1/memories", user_id=USER, status="correct-horse-battery-staple-91")
    assert response.status_code in (400, 422), response.text
    assert "battery-staple-91" not in response.text
