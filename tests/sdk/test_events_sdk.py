"""Change events through the SDK (sync and async) and over raw HTTP: webhooks, dead letters, and the
server-sent event stream, each tenant seeing only its own."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
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


async def read_events(lines: AsyncIterator[str], n: int) -> list[tuple[int, dict[str, Any]]]:
    """The next `n` events of an open server-sent event stream: (id, the JSON a webhook would get)."""
    out: list[tuple[int, dict[str, Any]]] = []
    event_id = 0
    async for line in lines:
        if line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: "):
            out.append((event_id, json.loads(line[6:])))
            if len(out) == n:
                break
    return out


async def write(client: httpx.AsyncClient, content: str) -> str:
    response = await client.post("/v1/memories", json={"user_id": "shared-name", "content": content})
    assert response.status_code == 201, response.text
    return str(response.json()["memory"]["id"])


async def streamed(client: httpx.AsyncClient, n: int, **request: Any) -> list[tuple[int, dict[str, Any]]]:
    async with client.stream("GET", "/v1/events/stream", **request) as response:
        assert response.status_code == 200, await response.aread()
        return await asyncio.wait_for(read_events(response.aiter_lines(), n), 30)


async def test_a_live_stream_sends_only_its_tenants_events_while_another_writes_between(
    live_url: str, new_tenant: NewTenant
) -> None:
    (_, key_a), (_, key_b) = await new_tenant(), await new_tenant()
    a = httpx.AsyncClient(base_url=live_url, headers={"Authorization": f"Bearer {key_a}"}, timeout=30)
    b = httpx.AsyncClient(base_url=live_url, headers={"Authorization": f"Bearer {key_b}"}, timeout=30)
    ours = ["I keep bees on the roof", "I play the cello", "I grow tomatoes"]
    theirs = ["I sail on weekends", "I collect stamps", "I speak Finnish"]
    async with a, b:
        async with a.stream("GET", "/v1/events/stream") as response:  # from now on, live
            assert response.status_code == 200
            mine, others = [], []
            for own, other in zip(ours, theirs, strict=True):
                mine.append(await write(a, own))
                others.append(await write(b, other))
            received = await asyncio.wait_for(read_events(response.aiter_lines(), 3), 30)
        assert [e["data"]["memory_id"] for _, e in received] == mine
        assert {e["type"] for _, e in received} == {"memory.created"}
        assert not any(word in json.dumps(received) for word in ("sail", "stamps", "Finnish", *others))
        b_events = await streamed(b, 3, params={"after": 0})
        assert [e["data"]["memory_id"] for _, e in b_events] == others
        a_ids, b_ids = [i for i, _ in received], [i for i, _ in b_events]
        assert [e["id"] for _, e in received] == a_ids
        assert a_ids[0] < b_ids[0] < a_ids[1] < b_ids[1] < a_ids[2]  # B really wrote between A's writes

        # Resuming from one of B's event ids sends A's events after it, never B's.
        resumed = await streamed(a, 2, headers={"Last-Event-ID": str(b_ids[0])})
        assert [(i, e["data"]["memory_id"]) for i, e in resumed] == list(
            zip(a_ids[1:], mine[1:], strict=True)
        )
        async with a.stream("GET", "/v1/events/stream", params={"after": b_ids[-1]}) as response:
            later_b = await write(b, "I bake sourdough")
            later_a = await write(a, "I run on Sundays")
            [(_, event)] = await asyncio.wait_for(read_events(response.aiter_lines(), 1), 30)
        assert event["data"]["memory_id"] == later_a
        assert later_b not in json.dumps(event)


def test_verify_signature_accepts_a_fresh_signed_body_and_refuses_everything_else() -> None:
    from app.webhooks.signing import sign

    secret, body, now = "whsec_test", b'{"id":1}', 1_700_000_000
    header = sign(secret, now, body)
    assert verify_signature(secret, body, str(now), header, now=now + 10)
    assert not verify_signature("whsec_other", body, str(now), header, now=now)
    assert not verify_signature(secret, body + b" ", str(now), header, now=now)
    assert not verify_signature(secret, body, str(now), header, now=now + 301)  # too old: a replay
    assert not verify_signature(secret, body, "soon", header, now=now)
