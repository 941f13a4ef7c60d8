"""Guards run before the body is parsed, so a request without credentials is a 401 whatever it sends."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from app.tenancy.auth import bearer_token


def require_bearer(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Reject a missing or malformed Authorization header early; the key itself is checked later."""
    bearer_token(connection.headers.get("authorization"))
