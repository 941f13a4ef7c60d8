"""Access log: one JSON line per request with id, tenant, route, status and latency; never content."""

from __future__ import annotations

import time
import uuid

import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.lib.logging import get_logger
from app.lib.metrics import observe_request

log = get_logger("engram.access")
_LOGGED = "engram.access_logged"
MAX_LOGGED_PATH = 200


def access_log_middleware(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex[:16]
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
            await send(message)

        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        scope[_LOGGED] = True  # type: ignore[literal-required]
        try:
            await app(scope, receive, send_wrapper)
        finally:
            state = scope.get("state") or {}
            elapsed = time.perf_counter() - started
            observe_request(scope.get("method", ""), scope.get("path_template"), status, elapsed)
            log.info(
                "request",
                method=scope.get("method"),
                route=scope.get("path_template") or scope.get("path"),
                status=status,
                latency_ms=round(elapsed * 1000, 2),
                tenant_id=state.get("tenant_id"),
            )
            structlog.contextvars.clear_contextvars()

    return middleware


def unrouted_access_log(app: ASGIApp) -> ASGIApp:
    """The access log line of a request no route took: a 404 or 405 is answered by the router before any
    route's middleware runs, so `access_log_middleware` never sees it, and path scanning went unlogged.
    Wraps the whole app (its ASGI handler); logs method, path (cut to 200 characters), status, latency.
    Never a body, headers or query string."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_wrapper)
        finally:
            if not scope.get(_LOGGED):
                elapsed = time.perf_counter() - started
                observe_request(scope.get("method", ""), None, status, elapsed)
                log.info(
                    "request",
                    method=scope.get("method"),
                    route=None,
                    path=str(scope.get("path", ""))[:MAX_LOGGED_PATH],
                    status=status,
                    latency_ms=round(elapsed * 1000, 2),
                    tenant_id=None,
                )

    return middleware
