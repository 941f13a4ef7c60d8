"""One place that turns exceptions into the API's error shape `{"error", "detail"}`."""

from __future__ import annotations

import math
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm.exc import StaleDataError

from app.api.request import refused_body
from app.embeddings.base import EmbeddingError
from app.lib.errors import EngramError, LimitReached
from app.lib.jsonbody import without_values
from app.lib.logging import get_logger
from app.lib.metrics import observe_error
from app.lib.redaction import redact

log = get_logger("engram.errors")

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
    503: "unavailable",
}


def _error(
    status: int, code: str, detail: str, headers: dict[str, str] | None = None
) -> Response[dict[str, str]]:
    observe_error(code, status)
    return Response({"error": code, "detail": redact(detail).text}, status_code=status, headers=headers)


def engram_error(_: Request[Any, Any, Any], exc: EngramError) -> Response[dict[str, str]]:
    if isinstance(exc, LimitReached) and exc.retry_after_s is not None:
        # Whole seconds, rounded up (RFC 9110): a client that waits this long finds room.
        retry_after = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
        return _error(exc.status_code, exc.code, exc.detail, retry_after)
    return _error(exc.status_code, exc.code, exc.detail)


def http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, str]]:
    if isinstance(exc, ValidationException) and (refused := refused_body(request)) is not None:
        return engram_error(request, refused)  # the strict decoder's message, naming the field
    if isinstance(exc, ValidationException):
        # Malformed JSON is a 400; a well-formed body that breaks the schema is a 422.
        detail = str(exc.detail)
        extra = exc.extra if isinstance(exc.extra, list) else []
        messages = [
            f"{e.get('key', '')}: {without_values(str(e.get('message', '')))}".strip(": ")
            for e in extra
            if isinstance(e, dict)
        ]
        if messages:
            detail = "; ".join(messages)
        status = 400 if "JSON is malformed" in detail or "malformed" in detail.lower() else 422
        return _error(status, _CODES[status], detail)
    status = exc.status_code
    return _error(status, _CODES.get(status, "error"), str(exc.detail))


def embedding_error(_: Request[Any, Any, Any], exc: EmbeddingError) -> Response[dict[str, str]]:
    log.warning("embedding_failed", error=str(exc))
    return _error(503, "unavailable", "the embedding provider failed; try again later")


# Transient conflicts between concurrent transactions: nothing was written, the client may retry.
RETRYABLE_SQLSTATES = {"40P01": "deadlock", "40001": "serialization failure", "55P03": "lock timeout"}


def database_error(request: Request[Any, Any, Any], exc: DBAPIError) -> Response[dict[str, str]]:
    state = getattr(exc.orig, "sqlstate", None)
    if state in RETRYABLE_SQLSTATES:
        log.warning("transaction_conflict", sqlstate=state)
        return _error(
            409,
            "conflict",
            f"a concurrent request touched the same data ({RETRYABLE_SQLSTATES[state]}); retry",
        )
    return unexpected_error(request, exc)


def stale_row_error(_: Request[Any, Any, Any], exc: StaleDataError) -> Response[dict[str, str]]:
    """An UPDATE of a row another transaction deleted (a user erase racing a write to that user's slot:
    the writer read the slot's memory, the erase deleted it before the writer retired it). The whole
    transaction is rolled back, so like a deadlock it is a conflict the client may retry."""
    log.warning("transaction_conflict", reason="stale_row", error_type=type(exc).__name__)
    return _error(409, "conflict", "a concurrent request removed a memory this write changes; retry")


def unexpected_error(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, str]]:
    log.error("unhandled_error", error_type=type(exc).__name__, exc_info=exc)
    return _error(500, "internal_error", "an unexpected error occurred; it has been logged")


EXCEPTION_HANDLERS = {
    EngramError: engram_error,
    HTTPException: http_error,
    EmbeddingError: embedding_error,
    DBAPIError: database_error,
    StaleDataError: stale_row_error,
    Exception: unexpected_error,
}
