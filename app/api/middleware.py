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
