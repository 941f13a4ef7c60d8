"""A loopback HTTP server that answers from a script (for client retry and error tests).

Each request takes the next scripted answer: a status, headers and a JSON body, or `DROP` (the
connection is closed without a response). When the script runs out, the last answer repeats. Every
request is recorded with its arrival time, so a test can check how long a client waited.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


DROP = Answer(status=0)


@dataclass(frozen=True)
class Received:
    at: float  # time.monotonic()
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class ScriptedHttp:
    def __init__(self, answers: list[Answer]) -> None:
        self.answers = list(answers)
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.url = ""

    def next_answer(self, request: Received) -> Answer:
        with self.lock:
            self.received.append(request)
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def gaps(self) -> list[float]:
        """Seconds between consecutive requests."""
        times = [r.at for r in self.received]
        return [b - a for a, b in itertools.pairwise(times)]


def _handler(script: ScriptedHttp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            received = Received(time.monotonic(), self.command, self.path, dict(self.headers), body)
            answer = script.next_answer(received)
            if answer is DROP:
                self.close_connection = True
                self.connection.close()
                return
            payload = json.dumps(answer.body).encode()
            self.send_response(answer.status)
            for name, value in {"content-type": "application/json", **answer.headers}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_DELETE = _answer  # noqa: N815 (http.server's names)

    return Handler


@contextmanager
def scripted_http(answers: list[Answer]) -> Iterator[ScriptedHttp]:
    script = ScriptedHttp(answers)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    server.daemon_threads = True
    script.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="scripted-http", daemon=True)
    thread.start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
