"""The project's exception hierarchy: each error carries its HTTP status and a machine code.

Domain code raises these; one handler in `app.api.errors` turns them into the API's error shape.
"""

from __future__ import annotations


class EngramError(Exception):
    """Base class: a status code, a stable machine code and a human sentence."""

    status_code: int = 500
    code: str = "internal_error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class BadRequest(EngramError):
    status_code = 400
    code = "bad_request"


class Unauthorized(EngramError):
    status_code = 401
    code = "unauthorized"


class Forbidden(EngramError):
    status_code = 403
    code = "forbidden"


class NotFound(EngramError):
    status_code = 404
    code = "not_found"


class Conflict(EngramError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(EngramError):
    status_code = 413
    code = "payload_too_large"


class ValidationFailed(EngramError):
    status_code = 422
    code = "validation_error"


class ServiceUnavailable(EngramError):
    status_code = 503
    code = "unavailable"


class LimitReached(EngramError):
    """A per-tenant limit. `retry_after_s`: when to try again (the response's Retry-After), if known."""

    status_code = 429
    code = "rate_limited"

    def __init__(self, detail: str, retry_after_s: float | None = None) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s


class RateLimited(LimitReached):
    """Over the tenant's requests per minute."""


class ConcurrencyLimited(LimitReached):
    """The tenant's concurrent requests stayed at its cap for as long as a request may queue."""

    code = "concurrency_limited"


class TokenQuotaExceeded(LimitReached):
    """The tenant's model tokens over the last 24 hours reached its daily quota."""

    code = "token_quota_exceeded"


class MemoryQuotaExceeded(LimitReached):
    """Storing this would take the tenant past its memories quota: nothing was written."""

    status_code = 409
    code = "memory_quota_exceeded"
