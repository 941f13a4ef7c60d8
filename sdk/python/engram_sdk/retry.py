"""When to try a request again, and after how long: pure decisions, no I/O (the clients do the waiting)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

# Methods a broken connection may have delivered without harm if sent again.
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def _retryable_status(status: int) -> bool:
    return status == 429 or (status >= 500 and status != 501)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter; a `Retry-After` from the server is a floor, never cut short.

    Attempt `n` (0-based) waits a random time in `[0, min(max_backoff, backoff * 2**n)]`, or at least
    the server's `Retry-After`. A `Retry-After` longer than `max_retry_after` is not waited out: the
    error is raised at once with its `retry_after`, so the caller can schedule the work itself.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    retry_status: Callable[[int], bool] = _retryable_status
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def backoff_delay(self, attempt: int) -> float:
        return self.jitter() * min(self.max_backoff, self.backoff * 2.0**attempt)

    def after_status(self, attempt: int, status: int, retry_after: float | None) -> float | None:
        """The wait before attempt `attempt + 1` after a response with this status; None: do not retry."""
        if attempt >= self.max_retries or not self.retry_status(status):
            return None
        if retry_after is None:
            return self.backoff_delay(attempt)
        if retry_after > self.max_retry_after:
            return None
        return max(retry_after, self.backoff_delay(attempt))

    def after_failure(self, attempt: int, error: httpx.TransportError, method: str) -> float | None:
        """The wait after a transport failure; None: do not retry.

        A request that never left (no connection) is always safe to resend; one that may have reached
        the server is resent only if its method is idempotent.
        """
        if attempt >= self.max_retries:
            return None
        never_sent = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        if not never_sent and method.upper() not in IDEMPOTENT:
            return None
        return self.backoff_delay(attempt)


NO_RETRY = RetryPolicy(max_retries=0)
