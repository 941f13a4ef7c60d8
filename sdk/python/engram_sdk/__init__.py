"""Typed Python client for the Engram memory service: `Engram` (blocking) and `AsyncEngram` (asyncio)."""

from engram_sdk._version import __version__
from engram_sdk.client import AsyncEngram, Engram
from engram_sdk.errors import (
    BadRequestError,
    ConcurrencyLimitedError,
    ConflictError,
    ConnectionFailedError,
    EngramError,
    ForbiddenError,
    InternalServerError,
    MemoryQuotaExceededError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    TokenQuotaExceededError,
    UnauthorizedError,
    UnavailableError,
    UnexpectedResponseError,
    UnsupportedMediaTypeError,
    ValidationError,
)
from engram_sdk.models import (
    ExportDocument,
    Memory,
    Page,
    RecallResult,
    RememberResult,
)
from engram_sdk.operations import routes
from engram_sdk.requests import ForgetFilter, Message, NewMemory
from engram_sdk.retry import NO_RETRY, RetryPolicy
from engram_sdk.webhooks import verify_signature

__all__ = [
    "NO_RETRY",
    "AsyncEngram",
    "BadRequestError",
    "ConcurrencyLimitedError",
    "ConflictError",
    "ConnectionFailedError",
    "Engram",
    "EngramError",
    "ExportDocument",
    "ForbiddenError",
    "ForgetFilter",
    "InternalServerError",
    "Memory",
    "MemoryQuotaExceededError",
    "Message",
    "MethodNotAllowedError",
    "NewMemory",
    "NotFoundError",
    "Page",
    "PayloadTooLargeError",
    "RateLimitedError",
    "RecallResult",
    "RememberResult",
    "RetryPolicy",
    "TokenQuotaExceededError",
    "UnauthorizedError",
    "UnavailableError",
    "UnexpectedResponseError",
    "UnsupportedMediaTypeError",
    "ValidationError",
    "__version__",
    "routes",
    "verify_signature",
]
