"""Guards run before the body is parsed, so a request without credentials is a 401 whatever it sends."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from app.tenancy.auth import bearer_token


async def require_bearer(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Reject a missing or malformed Authorization header early; the key itself is checked later."""
    # async on purpose: Litestar runs a sync guard in its thread pool, a thread hop (and a wait for the
    # GIL) on every request (bench.workers' profile: 0.9% in submit alone, the hop's cost beside it).
    bearer_token(connection.headers.get("authorization"))
