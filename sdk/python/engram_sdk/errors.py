"""One exception class per API error code, all under `EngramError` (status, code, detail).

The service answers every error as `{"error": "<code>", "detail": "<sentence>"}`; the class is chosen by
the code, then by the HTTP status when the code is one this SDK does not know yet, so a newer server
never turns an error into a crash of the client.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import ClassVar

import httpx
import msgspec


class EngramError(Exception):
    """Base class. `status` is None when no HTTP response was received."""

    error_code: ClassVar[str] = "error"
    http_status: ClassVar[int | None] = None

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status if status is not None else self.http_status
        self.code = code or self.error_code
        self.retry_after = retry_after  # seconds the server asked to wait (429 / 503), if it said

    def __str__(self) -> str:
        status = f" {self.status}" if self.status is not None else ""
        return f"{self.code}{status}: {self.detail}"


class BadRequestError(EngramError):
    error_code, http_status = "bad_request", 400


class UnauthorizedError(EngramError):
    error_code, http_status = "unauthorized", 401


class ForbiddenError(EngramError):
    error_code, http_status = "forbidden", 403


class NotFoundError(EngramError):
    error_code, http_status = "not_found", 404


class MethodNotAllowedError(EngramError):
    error_code, http_status = "method_not_allowed", 405


class ConflictError(EngramError):
    error_code, http_status = "conflict", 409


class PayloadTooLargeError(EngramError):
    error_code, http_status = "payload_too_large", 413


class UnsupportedMediaTypeError(EngramError):
    error_code, http_status = "unsupported_media_type", 415


class ValidationError(EngramError):
    error_code, http_status = "validation_error", 422


class RateLimitedError(EngramError):
    error_code, http_status = "rate_limited", 429


class ConcurrencyLimitedError(RateLimitedError):
    """The tenant's requests in flight stayed at its limit while this one queued (retry later)."""

    error_code = "concurrency_limited"


class TokenQuotaExceededError(RateLimitedError):
    """The tenant's model tokens over the last 24 hours reached its quota (`retry_after`: when some free)."""

    error_code = "token_quota_exceeded"


class MemoryQuotaExceededError(ConflictError):
    """Storing this would take the tenant past its memories quota; nothing was written."""

    error_code = "memory_quota_exceeded"


class InternalServerError(EngramError):
    error_code, http_status = "internal_error", 500


class UnavailableError(EngramError):
    error_code, http_status = "unavailable", 503


class ConnectionFailedError(EngramError):
    """The service could not be reached (or the connection broke) after the retries."""

    error_code = "connection_error"


class UnexpectedResponseError(EngramError):
    """A success status whose body is not what the operation returns (a proxy page, an older server)."""

    error_code = "unexpected_response"


# Adding a code the service learns is one class above and one entry here.
ERROR_CLASSES: tuple[type[EngramError], ...] = (
    BadRequestError,
    UnauthorizedError,
    ForbiddenError,
    NotFoundError,
    MethodNotAllowedError,
    ConflictError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
    ValidationError,
    RateLimitedError,
    ConcurrencyLimitedError,
    TokenQuotaExceededError,
    MemoryQuotaExceededError,
    InternalServerError,
    UnavailableError,
)
BY_CODE: dict[str, type[EngramError]] = {c.error_code: c for c in ERROR_CLASSES}
# By status: the base class of each status (a subclass shares its parent's status).
BY_STATUS: dict[int, type[EngramError]] = {
    c.http_status: c for c in ERROR_CLASSES if c.http_status and c.__base__ is EngramError
}


class _ErrorBody(msgspec.Struct):
    error: str
    detail: str = ""


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a `Retry-After` header: delta-seconds or an HTTP date; None if absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def error_from_response(response: httpx.Response) -> EngramError:
    """The exception for an error response, whatever its body."""
    try:
        body = msgspec.json.decode(response.content, type=_ErrorBody)
        code, detail = body.error, body.detail
    except (msgspec.DecodeError, msgspec.ValidationError):
        code, detail = "", response.text[:500] or response.reason_phrase
    cls = BY_CODE.get(code) or _by_status(response.status_code)
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    return cls(detail, status=response.status_code, code=code or None, retry_after=retry_after)


def _by_status(status: int) -> type[EngramError]:
    if status in BY_STATUS:
        return BY_STATUS[status]
    if status in (502, 504):  # a gateway in front of the service: it is unavailable, not broken
        return UnavailableError
    if status >= 500:
        return InternalServerError
    return BadRequestError if 400 <= status < 500 else UnexpectedResponseError
