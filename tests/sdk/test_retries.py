"""Retries, sync and async, against a loopback server that answers 429 / 503 / drops before it succeeds."""

from __future__ import annotations

import socket
import uuid
from datetime import UTC, datetime

import pytest

from engram_sdk import (
    BadRequestError,
    ConnectionFailedError,
    RateLimitedError,
    RetryPolicy,
    UnavailableError,
    UnexpectedResponseError,
)
from tests.sdk.conftest import Connect
from tests.support.scripted_http import DROP, Answer, scripted_http
from tests.support.sdk import run

OK = Answer(200, {"status": "ok"})
FAST = RetryPolicy(max_retries=3, backoff=0.01, max_backoff=0.05)


def rate_limited(retry_after: str) -> Answer:
    return Answer(429, {"error": "rate_limited", "detail": "slow down"}, {"retry-after": retry_after})


def memory_json(memory_id: uuid.UUID) -> dict[str, object]:
    now = datetime.now(UTC).isoformat()
    return {
        "id": str(memory_id), "user_id": "u", "project_id": None, "session_id": None, "type": "fact",
        "subject": None, "content": "c", "summary": None, "status": "active", "importance": 0.5,
        "salience": 1.0, "confidence": 0.8, "privacy": "public", "tags": [], "created_at": now,
        "updated_at": now, "valid_from": now, "valid_to": None, "expires_at": None,
        "last_accessed_at": None, "access_count": 0, "supersedes": None, "superseded_by": None,
        "source": "api", "source_model": None, "source_message_id": None, "embed_model": "hash",
    }  # fmt: skip


async def test_a_429_is_retried_no_sooner_than_its_retry_after(connect: Connect) -> None:
    with scripted_http([rate_limited("1"), OK]) as server:
        client = connect("egm_k", base_url=server.url, retry=RetryPolicy(backoff=0.01))
        assert (await run(client.health())).status == "ok"
    assert len(server.received) == 2
    assert server.gaps()[0] >= 1.0
    assert all(r.headers["authorization"] == "Bearer egm_k" for r in server.received)


async def test_a_503_then_a_500_are_retried_with_backoff_and_the_body_is_resent(connect: Connect) -> None:
    unavailable = Answer(503, {"error": "unavailable", "detail": "embedder down"}, {"retry-after": "0"})
    broken = Answer(500, {"error": "internal_error", "detail": "oops"})
    memory_id = uuid.uuid4()
    created = {"memory": memory_json(memory_id), "action": "created", "superseded": [], "proposals": [],
               "redacted": False}  # fmt: skip
    with scripted_http([unavailable, broken, Answer(201, created)]) as server:
        client = connect("egm_k", base_url=server.url, retry=FAST)
        result = await run(client.remember("u", "c"))
    assert result.memory.id == memory_id
    assert [r.method for r in server.received] == ["POST"] * 3
    assert len({r.body for r in server.received}) == 1  # the same body each time


async def test_retries_run_out_into_the_error_with_its_retry_after(connect: Connect) -> None:
    with scripted_http([rate_limited("0")]) as server:
        client = connect("egm_k", base_url=server.url, retry=RetryPolicy(max_retries=2, backoff=0.01))
        with pytest.raises(RateLimitedError) as caught:
            await run(client.health())
    assert len(server.received) == 3  # the first try and two retries
    assert (caught.value.status, caught.value.code, caught.value.retry_after) == (429, "rate_limited", 0.0)


async def test_a_retry_after_longer_than_the_policy_allows_is_raised_at_once(connect: Connect) -> None:
    with scripted_http([rate_limited("3600"), OK]) as server:
        client = connect("egm_k", base_url=server.url, retry=RetryPolicy(max_retry_after=30))
        with pytest.raises(RateLimitedError) as caught:
            await run(client.health())
    assert len(server.received) == 1
    assert caught.value.retry_after == 3600.0


async def test_client_errors_are_not_retried(connect: Connect) -> None:
    with scripted_http([Answer(400, {"error": "bad_request", "detail": "no"}), OK]) as server:
        client = connect("egm_k", base_url=server.url, retry=FAST)
        with pytest.raises(BadRequestError):
            await run(client.health())
    assert len(server.received) == 1


async def test_a_dropped_connection_is_retried_for_a_get_but_not_for_a_post(connect: Connect) -> None:
    with scripted_http([DROP, OK]) as server:
        client = connect("egm_k", base_url=server.url, retry=FAST)
        assert (await run(client.health())).status == "ok"
    assert len(server.received) == 2
    with scripted_http([DROP, OK]) as server:
        client = connect("egm_k", base_url=server.url, retry=FAST)
        with pytest.raises(ConnectionFailedError):  # the write may have happened: not sent twice
            await run(client.chat("u", "hello"))
    assert len(server.received) == 1


async def test_a_refused_connection_is_retried_then_reported(connect: Connect) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits: list[int] = []  # the policy draws one jitter per retry
    policy = RetryPolicy(max_retries=2, backoff=0.01, jitter=lambda: waits.append(1) or 0.0)
    client = connect("egm_k", base_url=f"http://127.0.0.1:{port}", retry=policy)
    with pytest.raises(ConnectionFailedError) as caught:
        await run(client.remember("u", "c"))  # never sent, so safe to retry even a POST
    assert len(waits) == 2
    assert caught.value.status is None
    assert "ConnectError" in caught.value.detail


async def test_a_success_status_with_a_foreign_body_is_an_unexpected_response(connect: Connect) -> None:
    with scripted_http([Answer(200, {"hello": "proxy"})]) as server:
        client = connect("egm_k", base_url=server.url, retry=FAST)
        with pytest.raises(UnexpectedResponseError):
            await run(client.health())


async def test_a_gateway_error_without_the_api_shape_is_unavailable(connect: Connect) -> None:
    with scripted_http([Answer(502, "<html>bad gateway</html>")]) as server:
        client = connect("egm_k", base_url=server.url, retry=RetryPolicy(max_retries=0))
        with pytest.raises(UnavailableError) as caught:
            await run(client.health())
    assert caught.value.status == 502
