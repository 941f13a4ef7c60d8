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
