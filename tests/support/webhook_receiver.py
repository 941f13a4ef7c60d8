"""A webhook receiver on a fixed loopback port that a test can take down and bring back.

`stop()` closes the listening socket (connections are refused) and `start()` binds the same port again;
`status` is what it answers while up (503 to play a struggling receiver). Every request it answered is
recorded with the status it got, so a test can count deliveries per event id.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.overlapping import free_port


@dataclass(frozen=True)
class Hit:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self.body)
        return decoded

    @property
    def event_id(self) -> str:
        return self.headers["engram-event-id"]


class Receiver:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.status = 200
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def accepted(self) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if 200 <= h.status < 300]

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status = receiver.status
                with receiver._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    receiver.hits.append(Hit(status, headers, body))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webhook-receiver", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
