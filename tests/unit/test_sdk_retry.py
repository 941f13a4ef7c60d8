"""The SDK's retry decisions (pure: no server, no sleeping)."""

from __future__ import annotations

import httpx
import pytest

from engram_sdk.retry import RetryPolicy

CEILING = RetryPolicy(max_retries=10, backoff=0.5, max_backoff=8.0, jitter=lambda: 1.0)


def test_backoff_doubles_up_to_its_cap_and_jitter_scales_it() -> None:
    assert [CEILING.backoff_delay(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    half = RetryPolicy(jitter=lambda: 0.5)
    assert half.backoff_delay(2) == 1.0


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_rate_limits_and_server_errors_are_retried(status: int) -> None:
    assert CEILING.after_status(0, status, None) == 0.5


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422, 501])
def test_client_errors_are_final(status: int) -> None:
    assert CEILING.after_status(0, status, None) is None


def test_retry_after_is_a_floor_and_a_long_one_is_not_waited_for() -> None:
    assert CEILING.after_status(0, 429, 3.0) == 3.0  # above the backoff: the server's wait
    assert CEILING.after_status(4, 503, 1.0) == 8.0  # below it: the backoff
    assert RetryPolicy(max_retry_after=60).after_status(0, 429, 61.0) is None


def test_the_retry_budget_is_counted_in_attempts() -> None:
    policy = RetryPolicy(max_retries=2, jitter=lambda: 1.0)
    assert [policy.after_status(n, 503, None) is not None for n in range(4)] == [True, True, False, False]
    assert RetryPolicy(max_retries=0).after_status(0, 503, 0.0) is None


def test_a_request_that_may_have_arrived_is_resent_only_if_idempotent() -> None:
    refused = httpx.ConnectError("refused")
    broken = httpx.ReadError("reset")
    assert CEILING.after_failure(0, refused, "POST") == 0.5
    assert CEILING.after_failure(0, broken, "GET") == 0.5
    assert CEILING.after_failure(0, broken, "DELETE") == 0.5
    assert CEILING.after_failure(0, broken, "POST") is None
    assert CEILING.after_failure(0, httpx.ReadTimeout("slow"), "PATCH") is None
    assert RetryPolicy(max_retries=1).after_failure(1, refused, "GET") is None
