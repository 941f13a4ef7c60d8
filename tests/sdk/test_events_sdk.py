"""Change events through the SDK (sync and async) and over raw HTTP: webhooks, dead letters, and the
server-sent event stream, each tenant seeing only its own."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from engram_sdk import NotFoundError, ValidationError, verify_signature
from engram_sdk.models import ChangeEvent, RememberResult
from tests.conftest import NewTenant
from tests.support.sdk import run

PUBLIC = "https://93.184.215.14/engram-hook"  # a public address literal: no DNS needed, never called


async def first_events(stream: Any, n: int) -> list[ChangeEvent]:
    """The first `n` events of a `stream_events` iterator (sync or async), then the stream is closed."""
    if hasattr(stream, "__aiter__"):
        out = []
        async for event in stream:
            out.append(event)
            if len(out) == n:
                break
        await stream.aclose()
        return out
    out = list(itertools.islice(stream, n))
    stream.close()
    return out


async def test_webhooks_are_per_tenant_through_the_sdk(sdk: Any, other_sdk: Any) -> None:
    created = await run(sdk.create_webhook(PUBLIC, description="sink", event_types=["created", "forgotten"]))
    assert created.secret.startswith("whsec_")
    assert created.webhook.event_types == ["created", "forgotten"]
    assert [h.id for h in (await run(sdk.list_webhooks())).items] == [created.webhook.id]
    assert (await run(other_sdk.list_webhooks())).items == []
    with pytest.raises(NotFoundError):
        await run(other_sdk.delete_webhook(created.webhook.id))
    with pytest.raises(ValidationError):
        await run(sdk.create_webhook("http://127.0.0.1:9/hook"))  # loopback: refused by default
    assert (await run(sdk.list_dead_letters())).items == []
    with pytest.raises(NotFoundError):
        await run(sdk.redeliver(1))
    deleted = await run(sdk.delete_webhook(created.webhook.id))
    assert deleted.id == created.webhook.id
    assert (await run(sdk.list_webhooks())).items == []


async def test_the_event_stream_sends_a_tenants_own_events_only(sdk: Any, other_sdk: Any) -> None:
    mine: RememberResult = await run(sdk.remember("alice", "I drink oolong tea"))
    theirs: RememberResult = await run(other_sdk.remember("alice", "I drink espresso"))
    [event] = await first_events(await run(sdk.stream_events(after=0)), 1)
    assert event.type == "memory.created"
    assert event.data["memory_id"] == str(mine.memory.id)
    assert "oolong" not in str(event)
    [other] = await first_events(await run(other_sdk.stream_events(after=0, user_id="alice")), 1)
    assert other.data["memory_id"] == str(theirs.memory.id)
    assert other.id != event.id


async def test_the_stream_resumes_after_last_event_id_and_refuses_bad_input(
    live_url: str, new_tenant: NewTenant
) -> None:
    _, key = await new_tenant()
    h = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=live_url, headers=h, timeout=30) as client:
        for content in ("I live in Porto", "I work at a bakery", "I have a cat"):
            assert (
                await client.post("/v1/memories", json={"user_id": "u", "content": content})
            ).status_code == 201
        received: list[tuple[str, str]] = []
        async with client.stream("GET", "/v1/events/stream", params={"after": 0}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            event_id = ""
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: "):
                    received.append((event_id, line[6:]))
                    if len(received) == 2:
                        break
        first_id = received[0][0]
        resumed: list[str] = []
        async with client.stream("GET", "/v1/events/stream", headers={"Last-Event-ID": first_id}) as response:
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    resumed.append(line[4:])
                    if len(resumed) == 2:
                        break
        assert resumed[0] == received[1][0]
        assert int(resumed[1]) > int(resumed[0]) > int(first_id)
        for params, headers in (
            ({"after": -1}, {}),
            ({"after": "x"}, {}),
            ({}, {"Last-Event-ID": "abc"}),
            ({"user_id": "\x00"}, {}),
        ):
            bad = await client.get("/v1/events/stream", params=params, headers=headers)
            assert 400 <= bad.status_code < 500, (params, bad.text)
        unauthenticated = await client.get("/v1/events/stream", headers={"Authorization": "Bearer nope"})
        assert unauthenticated.status_code == 401


def test_verify_signature_accepts_a_fresh_signed_body_and_refuses_everything_else() -> None:
    from app.webhooks.signing import sign

    secret, body, now = "whsec_test", b'{"id":1}', 1_700_000_000
    header = sign(secret, now, body)
    assert verify_signature(secret, body, str(now), header, now=now + 10)
    assert not verify_signature("whsec_other", body, str(now), header, now=now)
    assert not verify_signature(secret, body + b" ", str(now), header, now=now)
    assert not verify_signature(secret, body, str(now), header, now=now + 301)  # too old: a replay
    assert not verify_signature(secret, body, "soon", header, now=now)
