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
from app.serve import MAX_HEAD_BYTES
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


def _answer(port: int, request: bytes, reads: int = 1) -> bytes:
    """The status line the server answers `request` with, sent in `reads` pieces ("" if it closed first)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        step = len(request) // reads + 1
        try:
            for start in range(0, len(request), step):
                sock.sendall(request[start : start + step])
                if reads > 1:
                    time.sleep(0.01)  # each piece its own read
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the rest was sent: the answer is already there
        sock.settimeout(10)
        try:
            return sock.recv(4096).split(b"\r\n", 1)[0]
        except ConnectionResetError:
            return b""


def test_a_request_head_past_the_bound_is_refused_and_a_large_body_is_not(
    database: TestDatabase, tmp_path: Path
) -> None:
    """httptools reads a head of any size (an 8 MB header was read whole); the protocol bounds it, in one
    read or over many, by header size and by header count, and leaves bodies to the body limits."""
    port = free_port()
    env = serve_env(database, tmp_path, ENGRAM_EMBEDDER="hash")

    def head(header: bytes) -> bytes:
        return b"GET /health HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n"

    big = b"X-Big: " + b"a" * (MAX_HEAD_BYTES + 10) + b"\r\n"
    body = json.dumps({"user_id": USER, "query": "a" * (4 * MAX_HEAD_BYTES)}).encode()
    with serving(["--port", str(port), "--workers", "1"], env, tmp_path) as process:
        wait_ready(port, process)
        within = _answer(port, head(b"X-Big: " + b"a" * (MAX_HEAD_BYTES // 2) + b"\r\n"))
        within_dripped = _answer(port, head(b"X-Big: " + b"a" * (MAX_HEAD_BYTES // 2) + b"\r\n"), reads=20)
        one_read = _answer(port, head(big))
        many_reads = _answer(port, head(big), reads=40)
        # Never finished: refused once past the bound, not held until the header timeout.
        unfinished = _answer(
            port, b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * (MAX_HEAD_BYTES + 10), reads=40
        )
        many_headers = _answer(port, head(b"".join(b"X-%d: a\r\n" % i for i in range(MAX_HEAD_BYTES // 8))))
        long_target = _answer(port, b"GET /health?" + b"q" * (MAX_HEAD_BYTES + 10) + b" HTTP/1.1\r\n\r\n")
        large_body = _answer(
            port,
            b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body,
        )
    assert (within, within_dripped) == (b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK")
    refused = {"one_read": one_read, "many_reads": many_reads, "many_headers": many_headers}
    refused |= {"unfinished": unfinished, "long_target": long_target}
    assert refused == dict.fromkeys(refused, b"HTTP/1.1 400 Bad Request")
    assert large_body == b"HTTP/1.1 401 Unauthorized"  # read whole and answered by the app (no key)


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
