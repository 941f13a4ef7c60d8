"""`engram serve`: bind the port first, then serve in this process or in N worker processes.

The port is bound (and listening) before anything else starts, so a port already in use fails at
once with a clear message instead of after "listening" was printed. With several workers the parent
starts the embedded database once (when DATABASE_URL is unset), hands its URL to the workers through
the environment, and each worker builds its own app (`app.asgi:app_factory`): its own pool, caches,
embedder and reinforcement flush. The workers share the one listening socket.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.lib.errors import EngramError
from app.lib.metrics import MULTIPROC_ENV

BACKLOG = 2048  # uvicorn's default
DEFAULT_HEADER_TIMEOUT_S = 10.0
# The most bytes a request head (request line and headers) may take. h11 refused a head past its 16 KiB
# buffer; httptools sets no bound (an 8 MB header was read whole), so the protocol counts them.
MAX_HEAD_BYTES = 32 * 1024


class PortUnavailable(EngramError):
    code = "port_unavailable"


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port, inheritable by worker processes."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY only on connections whose socket says so. With proto 0
    # (uvicorn's own bind_socket does that) every response waited ~40 ms for the client's delayed ACK
    # (Nagle): /health at 1 client took 44 ms (bench.workers --kinds health), 1 ms of it CPU.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        reason = "is already in use" if exc.errno == 98 else f"cannot be bound ({exc.strerror})"
        raise PortUnavailable(f"port {port} on {host} {reason}; pick another with --port") from None
    sock.set_inheritable(True)
    return sock


class HeadTooLarge(Exception):
    pass


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header timeout (issue 23: 1,000 slow-header connections stayed
    open).

    httptools (llhttp, in C) rather than the pure-Python h11: /health's server CPU at 16 clients went from
    0.47 to 0.33 ms with uvloop beside it (bench.workers --kinds health, three interleaved rounds; the
    figures are in docs/PERFORMANCE.md). A head is bounded here, as h11 bounded it: once its request
    target and headers, or the bytes received while they are incomplete, pass `MAX_HEAD_BYTES`, the
    client gets a 400 and the connection is closed.

    uvicorn times out an idle kept-alive connection, but not one that is sending its request's headers:
    a client that sends a byte now and then holds a connection (and its memory) for as long as it likes,
    and any bytes cancel the keep-alive timer. Here a connection gets `header_timeout_s` from when it
    opens, and again from the end of each response, to deliver a whole request head; past it, it is
    closed. A request whose head arrived is never cut: its body and handler take what they take.
    The class attribute is the process's setting (`configure_header_timeout`; workers: `app.asgi`).
    """

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    _head_timer: asyncio.TimerHandle | None = None
    _in_head = True  # between a request's first byte and its last header
    _head_bytes = 0  # bytes received while in the head (a head arriving over several reads)
    _field_bytes = 0  # bytes of its parsed request target and headers (a head arriving in one read)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_head and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self.send_400_response("Request head too large.")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes, self._field_bytes = True, 0, 0

    def on_url(self, url: bytes) -> None:
        self._count_field(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_field(len(name) + len(value) + 4)  # as sent: `name: value\r\n`
        super().on_header(name, value)

    def _count_field(self, size: int) -> None:
        """Raised from a parser callback, the error reaches uvicorn as the parser's own: a 400, closed."""
        self._field_bytes += size
        if self._field_bytes > MAX_HEAD_BYTES:
            raise HeadTooLarge(f"request head over {MAX_HEAD_BYTES} bytes")

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's head, on this kept-alive connection

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_late, self.cycle)

    def _head_late(self, cycle_when_armed: object) -> None:
        self._head_timer = None
        # A new cycle since arming: a request head arrived in time.
        if self.cycle is cycle_when_armed and not self.transport.is_closing():
            self.transport.close()


def configure_header_timeout(seconds: float) -> None:
    HeaderTimeoutProtocol.header_timeout_s = seconds


def quiet_progress_bars() -> None:
    """No progress bars in a served process's stderr (JSON lines only); workers inherit this."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def resolve_workers(requested: int) -> int:
    """0 means one worker per CPU."""
    return requested if requested > 0 else max(1, os.cpu_count() or 1)


@contextmanager
def multiprocess_metrics() -> Iterator[None]:
    """A fresh directory for the workers' metric files (prometheus-client's multiprocess mode)."""
    if os.environ.get(MULTIPROC_ENV):
        yield  # the operator chose one (and clears it between runs)
        return
    path = tempfile.mkdtemp(prefix="engram-metrics-")
    os.environ[MULTIPROC_ENV] = path
    try:
        yield
    finally:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)


SUPERVISED_ENV = "ENGRAM_SUPERVISOR_PID"  # the workers of `engram serve --workers N`: whose they are


def exit_with_parent(supervisor: int, interval_s: float = 0.5) -> None:
    """Stop this worker (SIGTERM: a graceful shutdown) once its supervisor is gone. A supervisor killed
    with SIGKILL cannot stop its workers, and they went on serving the shared port and holding
    database connections, orphaned, until killed by hand. The supervisor's pid comes from the
    environment: a worker that starts after its supervisor died is already another process's child."""

    def watch() -> None:
        while os.getppid() == supervisor:
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="engram-parent-watch", daemon=True).start()


def run(
    sock: socket.socket,
    workers: int,
    build_app: Callable[[], object],
    environment: dict[str, str],
    on_exit: Sequence[Callable[[], None]] = (),
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
) -> None:
    """Serve on `sock` until a signal stops the server (one process) or the supervisor (N workers)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    configure_header_timeout(header_timeout_s)
    # The loop is uvicorn's "auto": uvloop where it is installed (a dependency, but for Windows).
    common = {"log_level": "warning", "access_log": False, "log_config": None, "http": HeaderTimeoutProtocol}
    try:
        if workers == 1:
            config = uvicorn.Config(build_app(), **common)  # type: ignore[arg-type]
            uvicorn.Server(config).run(sockets=[sock])
            return
        os.environ.update(environment)  # the workers' settings come from the environment
        os.environ[SUPERVISED_ENV] = str(os.getpid())
        with multiprocess_metrics():
            config = uvicorn.Config("app.asgi:app_factory", factory=True, workers=workers, **common)  # type: ignore[arg-type]
            Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
        for hook in on_exit:
            hook()
