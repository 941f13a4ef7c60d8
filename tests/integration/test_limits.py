"""Per-tenant limits (issue 23): enforced in PostgreSQL, so two apps (two processes' worth of state)
share them; over a limit is a 4xx in the API's error shape and nothing is written."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.cli import main as cli_main
from app.lib.settings import Settings
from app.main import create_app
from app.store.limits import set_overrides
from app.tenancy.types import TenantId
from tests.conftest import Api, NewTenant
from tests.support.live_server import serve_in_thread

USER = "limits-user"


async def set_limits(owner_engine: AsyncEngine, tenant: uuid.UUID, **values: int) -> None:
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        await session.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        await set_overrides(session, TenantId(tenant), values)


async def count_memories(owner_engine: AsyncEngine, tenant: uuid.UUID) -> int:
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        query = text("SELECT count(*) FROM memories WHERE tenant_id = :t")
        return int((await conn.execute(query, {"t": tenant})).scalar_one())


@pytest.fixture
async def second_client(settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    """Another app: its own pools, limiter and caches, as another worker process would have."""
    async with AsyncTestClient(app=create_app(settings)) as client:
        yield client


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "detail"}, body
    assert body["error"] == code, body
    return body


async def test_over_the_rate_is_429_with_retry_after_counted_across_apps(
    api: Api, other_api: Api, second_client: AsyncTestClient[Any], owner_engine: AsyncEngine
) -> None:
    await set_limits(owner_engine, api.tenant_id, requests_per_minute=4)
    elsewhere = Api(second_client, api.key, api.tenant_id)
    statuses = []
    for i in range(4):  # the bucket starts full: 4 requests, alternating between the two apps
        response = await (api if i % 2 == 0 else elsewhere).get("/v1/memories", user_id=USER)
        statuses.append(response.status_code)
    refused = await elsewhere.post("/v1/memories", {"user_id": USER, "content": "over the rate"})
    assert statuses == [200] * 4
    assert_error(refused, 429, "rate_limited")
    # 4 per minute: one request back every 15 s.
    assert 1 <= int(refused.headers["retry-after"]) <= 15
    assert await count_memories(owner_engine, api.tenant_id) == 0  # the refused write wrote nothing
    # Another tenant has its own bucket.
    assert (await other_api.get("/v1/memories", user_id=USER)).status_code == 200


async def test_the_bucket_refills_at_its_rate(api: Api, owner_engine: AsyncEngine) -> None:
    await set_limits(owner_engine, api.tenant_id, requests_per_minute=120)  # 2 per second
    async with owner_engine.connect() as conn, conn.begin():  # spend it: as if 120 requests just ran
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        await conn.execute(text("UPDATE tenant_limits SET bucket_tokens = 0, bucket_at = clock_timestamp()"))
    refused = await api.get("/v1/memories", user_id=USER)
    assert_error(refused, 429, "rate_limited")
    assert refused.headers["retry-after"] == "1"
    await asyncio.sleep(1.1)
    assert (await api.get("/v1/memories", user_id=USER)).status_code == 200


async def test_over_the_memory_quota_is_409_and_writes_nothing_batch_included(
    api: Api, other_api: Api, owner_engine: AsyncEngine
) -> None:
    await set_limits(owner_engine, api.tenant_id, max_memories=3)
    await api.remember(user_id=USER, content="I drink green tea", type="preference")
    batch = {"items": [{"user_id": USER, "content": f"fact number {i}"} for i in range(3)]}
    refused = assert_error(await api.post("/v1/memories/batch", batch), 409, "memory_quota_exceeded")
    assert "nothing was written" in refused["detail"]
    assert await count_memories(owner_engine, api.tenant_id) == 1
    for i in range(2):
        await api.remember(user_id=USER, content=f"the office is on floor {i + 3}", subject=f"office {i}")
    assert_error(
        await api.post("/v1/memories", {"user_id": USER, "content": "one too many"}),
        409,
        "memory_quota_exceeded",
    )
    assert await count_memories(owner_engine, api.tenant_id) == 3
    # Another tenant's quota is its own.
    await other_api.post("/v1/memories/batch", batch)
    assert await count_memories(owner_engine, other_api.tenant_id) == 3


async def test_an_import_over_the_memory_quota_imports_nothing(
    api: Api, other_api: Api, owner_engine: AsyncEngine
) -> None:
    for i in range(3):
        await other_api.remember(user_id=USER, content=f"exported fact {i}", subject=f"slot {i}")
    exported = await other_api.get("/v1/export", user_id=USER)
    assert exported.status_code == 200, exported.text
    await set_limits(owner_engine, api.tenant_id, max_memories=2)
    response = await api.client.post(
        "/v1/import", content=exported.content, headers={**api.headers, "content-type": "application/json"}
    )
    assert_error(response, 409, "memory_quota_exceeded")
    assert await count_memories(owner_engine, api.tenant_id) == 0


async def count_rows(owner_engine: AsyncEngine, tenant: uuid.UUID) -> dict[str, int]:
    """What a refused chat or extraction must not have written: memories, messages, memory events."""
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        row = (
            await conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM memories WHERE tenant_id = :t) AS memories,"
                    " (SELECT count(*) FROM messages WHERE tenant_id = :t) AS messages,"
                    " (SELECT count(*) FROM memory_events WHERE tenant_id = :t) AS events"
                ),
                {"t": tenant},
            )
        ).one()
    return {"memories": row.memories, "messages": row.messages, "events": row.events}


async def test_a_chat_that_would_store_a_memory_over_the_quota_is_409_and_writes_nothing(
    api: Api, owner_engine: AsyncEngine
) -> None:
    await set_limits(owner_engine, api.tenant_id, max_memories=1)
    await api.remember(user_id=USER, content="I drink green tea", type="preference")
    before = await count_rows(owner_engine, api.tenant_id)
    # The offline model stores this (a remember tool call): one memory too many.
    message = {"user_id": USER, "message": "Remember that I keep my bike in the shed", "session_id": "s1"}
    refused = assert_error(await api.post("/v1/chat", message), 409, "memory_quota_exceeded")
    assert "nothing was written" in refused["detail"]
    assert await count_rows(owner_engine, api.tenant_id) == before  # neither the memory nor the turns
    # A chat that stores nothing is served at the quota (and writes its two turns).
    asked = await api.post("/v1/chat", {"user_id": USER, "message": "What do I drink?", "session_id": "s1"})
    assert asked.status_code == 200, asked.text
    assert [c["name"] for c in asked.json()["tool_calls"]] == ["recall"]
    after = await count_rows(owner_engine, api.tenant_id)
    assert after == {**before, "messages": before["messages"] + 2}


async def test_an_extraction_over_the_memory_quota_is_409_and_writes_nothing(
    api: Api, owner_engine: AsyncEngine
) -> None:
    await set_limits(owner_engine, api.tenant_id, max_memories=2)
    await api.remember(user_id=USER, content="I drink green tea", type="preference")
    before = await count_rows(owner_engine, api.tenant_id)
    messages = [
        {"role": "user", "content": "I am vegan and I live in Lisbon"},  # two facts: one too many
        {"role": "assistant", "content": "Noted!"},
    ]
    body = {"user_id": USER, "messages": messages, "session_id": "s1"}
    refused = assert_error(await api.post("/v1/memories/extract", body), 409, "memory_quota_exceeded")
    assert "nothing was written" in refused["detail"]
    assert await count_rows(owner_engine, api.tenant_id) == before  # no memory, no stored message
    # One fact fits: the same extraction under the quota stores it.
    one = {**body, "messages": [{"role": "user", "content": "I live in Lisbon"}]}
    assert (await api.post("/v1/memories/extract", one)).status_code == 200
    assert (await count_rows(owner_engine, api.tenant_id))["memories"] == 2


async def test_past_the_concurrency_cap_a_request_queues_then_gets_429(
    settings: Settings, new_tenant: NewTenant, owner_engine: AsyncEngine, app_engine: AsyncEngine
) -> None:
    tenant, key = await new_tenant()
    await set_limits(owner_engine, tenant, concurrent_requests=1)
    headers = {"Authorization": f"Bearer {key}"}
    app = create_app(settings.model_copy(update={"limit_queue_s": 0.6}))
    with serve_in_thread(app) as url:  # a real server: the queued request runs while the test does
        async with httpx.AsyncClient(base_url=url, headers=headers) as client, app_engine.connect() as holder:
            # Another process's request holds the tenant's one slot (the same advisory lock, another session).
            await holder.begin()
            await holder.execute(text("SELECT pg_advisory_xact_lock(hashtext(:t), 1)"), {"t": str(tenant)})
            refused = await client.get("/v1/memories", params={"user_id": USER})
            assert_error(refused, 429, "concurrency_limited")
            assert refused.headers["retry-after"] == "1"
            # Released while a request queues: it gets the slot instead of a 429.
            queued = asyncio.create_task(client.get("/v1/memories", params={"user_id": USER}))
            await asyncio.sleep(0.2)
            assert not queued.done()
            await holder.rollback()
            assert (await queued).status_code == 200


async def test_over_the_daily_tokens_chat_is_429_and_usage_shows_the_limits(
    api: Api, owner_engine: AsyncEngine
) -> None:
    await set_limits(owner_engine, api.tenant_id, tokens_per_day=1, max_memories=50)
    first = await api.post("/v1/chat", {"user_id": USER, "message": "I prefer tea over coffee"})
    assert first.status_code == 200, first.text
    refused = await api.post("/v1/chat", {"user_id": USER, "message": "what do I drink?"})
    body = assert_error(refused, 429, "token_quota_exceeded")
    assert "24 hours" in body["detail"]
    assert 1 <= int(refused.headers["retry-after"]) <= 86400
    usage = await api.get("/v1/usage")
    assert usage.status_code == 200
    limits = usage.json()["limits"]
    spent = usage.json()["total"]["total_tokens"]
    assert spent > 0
    assert limits["tokens_per_day"] == 1
    assert limits["tokens_last_24h"] == spent
    assert limits["max_memories"] == 50
    assert limits["memories_stored"] == await count_memories(owner_engine, api.tenant_id)
    assert limits["requests_per_minute"] == 6000
    assert limits["requests_available"] < 6000
    assert limits["concurrent_requests"] == 32


async def test_cli_sets_shows_and_resets_a_tenants_limits(
    api: Api,
    settings: Settings,
    owner_engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", str(settings.database_url))
    async with owner_engine.connect() as conn:
        name = (
            await conn.execute(text("SELECT name FROM tenants WHERE id = :t"), {"t": api.tenant_id})
        ).scalar_one()

    def run(*args: str) -> dict[str, Any]:
        assert cli_main(["tenant", "limits", name, "--json", *args]) == 0
        result: dict[str, Any] = json.loads(capsys.readouterr().out)
        return result

    shown = await asyncio.to_thread(run, "--requests-per-minute", "2", "--max-memories", "0")
    assert shown["limits"]["requests_per_minute"] == 2
    assert shown["limits"]["max_memories"] == 0
    assert shown["overrides"]["concurrent_requests"] is None
    assert shown["limits"]["concurrent_requests"] == shown["defaults"]["concurrent_requests"]
    for _ in range(2):
        assert (await api.get("/v1/memories", user_id=USER)).status_code == 200
    assert_error(await api.get("/v1/memories", user_id=USER), 429, "rate_limited")
    reset = await asyncio.to_thread(run, "--requests-per-minute", "default")
    assert reset["overrides"]["requests_per_minute"] is None
    assert reset["overrides"]["max_memories"] == 0  # the other override stays


async def test_cli_refuses_a_negative_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["tenant", "limits", "anyone", "--json", "--max-memories", "-3"]) == 2
    assert "whole number" in capsys.readouterr().err
