"""Batched reinforcement (the service's default): recall notes what it packed, a background task writes it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from typing import Any

from litestar.testing import AsyncTestClient

from app.lib.settings import Settings
from app.memory.reinforcement import Reinforcements
from app.tenancy.types import TenantId
from tests.conftest import Api, NewTenant, running_client


def reinforcements_of(client: AsyncTestClient[Any]) -> Reinforcements:
    found = client.app.state.services.reinforcements
    assert isinstance(found, Reinforcements)
    return found


async def flush(client: AsyncTestClient[Any]) -> int:
    """Apply the batch on the app's own event loop (its connections belong to that loop's thread)."""
    applied: int = await asyncio.to_thread(client.blocking_portal.call, reinforcements_of(client).flush)
    return applied


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
