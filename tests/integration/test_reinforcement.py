"""Batched reinforcement (the service's default): recall notes what it packed, a background task writes it."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from app.store.access import Reinforcements
from app.tenancy.types import TenantId
from tests.conftest import Api, NewTenant, running_client
from tests.support.tables import table_rows


def reinforcements_of(client: AsyncTestClient[Any]) -> Reinforcements:
    found = client.app.state.services.reinforcements
    assert isinstance(found, Reinforcements)
    return found


async def flush(client: AsyncTestClient[Any]) -> int:
    """Apply the batch on the app's own event loop (its connections belong to that loop's thread)."""
    applied: int = await asyncio.to_thread(client.blocking_portal.call, reinforcements_of(client).flush)
    return applied


@pytest.fixture
async def batched(
    settings: Settings, new_tenant: NewTenant
) -> AsyncIterator[tuple[AsyncTestClient[Any], Api]]:
    """The served app with hour-long batches (applied only by `flush`), and a new tenant's client."""
    tenant_id, key = await new_tenant()
    async with running_client(settings.model_copy(update={"reinforce_interval_s": 3600})) as client:
        yield client, Api(client, key, tenant_id)


async def test_recall_writes_nothing_until_the_batch_is_applied(
    settings: Settings, new_tenant: NewTenant
) -> None:
    tenant_id, key = await new_tenant()
    batched = settings.model_copy(update={"reinforce_interval_s": 3600})
    async with running_client(batched) as client:
        api = Api(client, key, tenant_id)
        created = await api.remember(user_id="u", content="I prefer green tea in the afternoon")
        memory_id = created["memory"]["id"]
        for _ in range(3):
            result = await api.recall(user_id="u", query="what tea do I like?")
            assert [m["memory"]["id"] for m in result["memories"]] == [memory_id]
        assert (await api.memory(memory_id))["access_count"] == 0
        assert reinforcements_of(client).pending == 1

        assert await flush(client) == 1
        after = await api.memory(memory_id)
        assert after["access_count"] == 3  # three recalls, one row update
        assert after["last_accessed_at"] is not None
        assert reinforcements_of(client).pending == 0


async def test_the_background_task_applies_batches(settings: Settings, new_tenant: NewTenant) -> None:
    tenant_id, key = await new_tenant()
    async with running_client(settings.model_copy(update={"reinforce_interval_s": 0.05})) as client:
        api = Api(client, key, tenant_id)
        created = await api.remember(user_id="u", content="The backup job runs nightly at 2am")
        await api.recall(user_id="u", query="when does the backup run?")
        for _ in range(100):
            if (await api.memory(created["memory"]["id"]))["access_count"] == 1:
                break
            await asyncio.sleep(0.05)
        assert (await api.memory(created["memory"]["id"]))["access_count"] == 1


async def test_shutdown_applies_what_is_pending(settings: Settings, new_tenant: NewTenant) -> None:
    tenant_id, key = await new_tenant()
    batched = settings.model_copy(update={"reinforce_interval_s": 3600})
    async with running_client(batched) as client:
        api = Api(client, key, tenant_id)
        created = await api.remember(user_id="u", content="Our VPN is WireGuard")
        await api.recall(user_id="u", query="which VPN do we use?")
        assert reinforcements_of(client).pending == 1
    async with running_client(batched) as client:
        assert (await Api(client, key, tenant_id).memory(created["memory"]["id"]))["access_count"] == 1


async def test_a_batch_never_touches_another_tenants_memory(
    settings: Settings, new_tenant: NewTenant
) -> None:
    owner_id, owner_key = await new_tenant()
    intruder_id, _ = await new_tenant()
    batched = settings.model_copy(update={"reinforce_interval_s": 3600})
    async with running_client(batched) as client:
        owner = Api(client, owner_key, owner_id)
        created = await owner.remember(user_id="u", content="The cat is called Miso")
        reinforcements = reinforcements_of(client)
        # Ids noted under the wrong tenant (a bug elsewhere) must not reach the owner's row.
        when = datetime.fromisoformat(created["memory"]["created_at"])
        reinforcements.note(TenantId(intruder_id), [uuid.UUID(created["memory"]["id"])], when)
        assert await flush(client) == 0
        assert (await owner.memory(created["memory"]["id"]))["access_count"] == 0


async def test_reinforcement_writes_the_access_row_and_never_the_memory_row(
    batched: tuple[AsyncTestClient[Any], Api], owner_engine: AsyncEngine
) -> None:
    client, api = batched
    created = await api.remember(user_id="u", content="The staging database is on port 5433")
    memories = await table_rows(owner_engine, "memories", api.tenant_id)
    for _ in range(2):
        await api.recall(user_id="u", query="which port is staging on?")
    assert await flush(client) == 1
    rows = [json.loads(row) for row in await table_rows(owner_engine, "memory_access", api.tenant_id)]
    [access] = [row for row in rows if row["tenant_id"] == str(api.tenant_id)]
    assert await table_rows(owner_engine, "memories", api.tenant_id) == memories  # not even a new version
    assert (access["memory_id"], access["access_count"]) == (created["memory"]["id"], 2)


async def flush_while_held(
    client: AsyncTestClient[Any], owner_engine: AsyncEngine, tenant_id: uuid.UUID, sql: str, memory_id: str
) -> int:
    """Flush while another transaction holds a row lock (`sql` takes it). That transaction commits only
    after the flush returned, so a flush that waited for it would time out here."""
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant_id)})
        assert (await conn.execute(text(sql), {"m": memory_id})).all()
        return await asyncio.wait_for(flush(client), timeout=30)


async def test_a_batch_skips_a_memory_a_writer_holds_without_waiting_for_it(
    batched: tuple[AsyncTestClient[Any], Api], owner_engine: AsyncEngine
) -> None:
    client, api = batched
    locked = await api.remember(user_id="u", content="The release train leaves on Thursdays")
    free = await api.remember(user_id="u", content="The release notes live in the wiki")
    result = await api.recall(user_id="u", query="release train Thursdays notes wiki")
    assert len(result["memories"]) == 2
    writer = "SELECT id FROM memories WHERE id = :m FOR UPDATE"
    assert await flush_while_held(client, owner_engine, api.tenant_id, writer, locked["memory"]["id"]) == 1
    assert (await api.memory(free["memory"]["id"]))["access_count"] == 1
    assert (await api.memory(locked["memory"]["id"]))["access_count"] == 0  # skipped: best effort


async def test_a_batch_skips_an_access_row_held_elsewhere_instead_of_waiting(
    batched: tuple[AsyncTestClient[Any], Api], owner_engine: AsyncEngine
) -> None:
    client, api = batched
    created = await api.remember(user_id="u", content="Invoices are sent on the first of the month")
    await api.recall(user_id="u", query="when are invoices sent?")
    assert await flush(client) == 1
    await api.recall(user_id="u", query="when are invoices sent?")
    other = "SELECT memory_id FROM memory_access WHERE memory_id = :m FOR UPDATE"
    assert await flush_while_held(client, owner_engine, api.tenant_id, other, created["memory"]["id"]) == 0
    assert (await api.memory(created["memory"]["id"]))["access_count"] == 1
    assert reinforcements_of(client).pending == 0  # skipped, not retried: best effort


async def test_a_batch_gives_up_on_a_first_access_another_transaction_is_writing(
    batched: tuple[AsyncTestClient[Any], Api], owner_engine: AsyncEngine
) -> None:
    client, api = batched
    created = await api.remember(user_id="u", content="The office closes at 7pm on Fridays")
    await api.recall(user_id="u", query="when does the office close on Fridays?")
    first = (
        "INSERT INTO memory_access (tenant_id, memory_id, access_count)"
        " SELECT tenant_id, id, 4 FROM memories WHERE id = :m RETURNING memory_id"
    )  # uncommitted until the flush returns: the flush gives up on it (lock timeout)
    assert await flush_while_held(client, owner_engine, api.tenant_id, first, created["memory"]["id"]) == 0
    assert (await api.memory(created["memory"]["id"]))["access_count"] == 4  # the other's, not ours
