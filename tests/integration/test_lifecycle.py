"""Time: expiry at read time, the sweep (expire, then archive cold memories), deadlines, the CLI, the
periodic task; states and their events. The clock is moved, never slept on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.cli import main
from app.lib.clock import FrozenClock
from app.lib.console import ExitCode
from app.lib.periodic import PeriodicTask
from app.lib.settings import Settings
from app.main import create_app
from app.memory.maintenance import service_maintenance, sweep_tenants
from tests.conftest import Api, NewTenant, running_client
from tests.support.database import TestDatabase
from tests.support.tables import table_rows, tenant_name

START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday


@asynccontextmanager
async def frozen_api(settings: Settings, new_tenant: NewTenant) -> AsyncIterator[tuple[Api, FrozenClock]]:
    clock = FrozenClock(START)
    tenant_id, key = await new_tenant()
    async with running_client(settings, clock) as client:
        yield Api(client, key, tenant_id), clock


def recalled(result: dict[str, Any]) -> list[str]:
    return [m["memory"]["id"] for m in result["memories"]]


async def events(api: Api, memory_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/memories/{memory_id}/history")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["events"]
    return [e for e in found if e["memory_id"] == memory_id]


async def test_temporary_memory_is_recalled_before_expiry_and_not_after_and_a_second_sweep_changes_nothing(
    settings: Settings, new_tenant: NewTenant, owner_engine: AsyncEngine
) -> None:
    async with frozen_api(settings, new_tenant) as (api, clock):
        temp = (await api.remember(user_id="u", content="Parking spot 42 is mine today", type="temporary"))[
            "memory"
        ]
        assert temp["expires_at"].startswith("2026-12-01T12:00:00")
        clock.advance(timedelta(hours=23, minutes=59))
        assert recalled(await api.recall(user_id="u", query="parking spot")) == [temp["id"]]

        clock.advance(timedelta(minutes=2))
        assert recalled(await api.recall(user_id="u", query="parking spot")) == []
        assert (await api.get(f"/v1/memories/{temp['id']}")).json()["status"] == "active"  # until the sweep

        name = await tenant_name(owner_engine, api.tenant_id)
        [first] = await sweep_tenants(owner_engine, settings, clock, [name])
        assert (first.expired, first.archived) == (1, 0)
        assert (await api.get(f"/v1/memories/{temp['id']}")).json()["status"] == "expired"
        [expired] = [e for e in await events(api, temp["id"]) if e["kind"] == "expired"]
        assert expired["actor"] == "maintenance"
        assert "has passed" in expired["reason"]

        memories = await table_rows(owner_engine, "memories", api.tenant_id)
        log = await table_rows(owner_engine, "memory_events", api.tenant_id)
        [second] = await sweep_tenants(owner_engine, settings, clock, [name])
        assert (second.expired, second.archived) == (0, 0)
        assert await table_rows(owner_engine, "memories", api.tenant_id) == memories
        assert await table_rows(owner_engine, "memory_events", api.tenant_id) == log


async def test_deadline_memory_expires_after_the_date_in_its_text(
    settings: Settings, new_tenant: NewTenant
) -> None:
    async with frozen_api(settings, new_tenant) as (api, clock):
        due = (await api.remember(user_id="u", content="Grant report is due Friday", type="deadline"))[
            "memory"
        ]
        undated = (
            await api.remember(user_id="u", content="Renew the passport at some point", type="deadline")
        )["memory"]
        assert due["expires_at"].startswith("2026-12-05T00:00:00")  # the end of Friday Dec 4
        assert undated["expires_at"] is None
        clock.advance(timedelta(days=4, hours=11))  # Friday 23:00
        assert due["id"] in recalled(await api.recall(user_id="u", query="grant report due"))
        clock.advance(timedelta(hours=2))
        assert due["id"] not in recalled(await api.recall(user_id="u", query="grant report due"))
        assert undated["id"] in recalled(await api.recall(user_id="u", query="renew passport"))


async def test_sweep_archives_cold_unimportant_memories_but_never_pinned_or_critical_ones(
    settings: Settings, new_tenant: NewTenant, owner_engine: AsyncEngine
) -> None:
    async with frozen_api(settings, new_tenant) as (api, clock):
        cold = (await api.remember(user_id="u", content="Saw a heron by the canal", importance=0.1))["memory"]
        used = (await api.remember(user_id="u", content="The VPN host is vpn.example.org", importance=0.1))[
            "memory"
        ]
        important = (await api.remember(user_id="u", content="Daughter is called Mia", importance=0.9))[
            "memory"
        ]
        pinned = (
            await api.remember(user_id="u", content="Office is on floor 3", importance=0.1, pinned=True)
        )["memory"]
        rule = (
            await api.remember(
                user_id="u", content="Never deploy on a Friday", importance=0.1, type="critical_rule"
            )
        )["memory"]
        clock.advance(timedelta(days=60))
        assert used["id"] in recalled(await api.recall(user_id="u", query="VPN host"))  # touched at day 60
        clock.advance(timedelta(days=40))

        [report] = await sweep_tenants(
            owner_engine, settings, clock, [await tenant_name(owner_engine, api.tenant_id)]
        )
        assert (report.expired, report.archived) == (0, 1)
        status = {m["id"]: m["status"] for m in (await api.get("/v1/memories", user_id="u")).json()["items"]}
        assert status == {
            cold["id"]: "archived",
            used["id"]: "active",
            important["id"]: "active",
            pinned["id"]: "pinned",
            rule["id"]: "active",
        }
        [archived] = [e for e in await events(api, cold["id"]) if e["kind"] == "archived"]
        assert archived["reason"].startswith("cold: unused for 100 days")
        assert archived["details"]["importance"] == 0.1


async def test_engram_maintenance_cli_sweeps_the_named_tenant(
    api: Api,
    database: TestDatabase,
    owner_engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    gone = (await api.remember(user_id="u", content="Door code is 4711 until noon", expires_at=past))[
        "memory"
    ]
    monkeypatch.setenv("DATABASE_URL", database.owner_url)
    name = await tenant_name(owner_engine, api.tenant_id)
    assert await asyncio.to_thread(main, ["maintenance", "--tenant", name]) == 0
    assert "expired 1, archived 0" in capsys.readouterr().out
    assert (await api.get(f"/v1/memories/{gone['id']}")).json()["status"] == "expired"
    assert (
        await asyncio.to_thread(main, ["maintenance", "--tenant", "no-such-tenant-x"]) == ExitCode.NOT_FOUND
    )
    assert "no tenant named" in capsys.readouterr().err


async def test_periodic_task_runs_at_once_survives_a_failed_run_and_stops_promptly() -> None:
    calls: list[int] = []

    async def job() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("database briefly away")

    task = PeriodicTask(job, interval_s=0)
    task.start()
    while task.runs < 2:
        task.ran.clear()
        assert await asyncio.to_thread(task.ran.wait, 5)
    await task.stop()
    assert len(calls) >= 2

    slow = PeriodicTask(job, interval_s=3600)
    slow.start()
    assert await asyncio.to_thread(slow.ran.wait, 5)
    await asyncio.wait_for(slow.stop(), 5)  # does not wait out the hour
    assert slow.runs == 1


async def test_the_service_runs_the_sweep_when_an_interval_is_set(
    settings: Settings, client: AsyncTestClient[Any], new_tenant: NewTenant
) -> None:
    assert service_maintenance(settings, FrozenClock(START)) is None  # off by default (and in tests)
    tenant_id, key = await new_tenant()
    api = Api(client, key, tenant_id)
    past = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    gone = (await api.remember(user_id="u", content="Lunch order closes soon", expires_at=past))["memory"]
    app = create_app(settings.model_copy(update={"maintenance_interval_s": 3600}))
    async with AsyncTestClient(app=app):
        # The app's lifespan runs on the test client's own loop; wait on that thread, not with sleeps.
        assert await asyncio.to_thread(app.state.maintenance.task.ran.wait, 30)
    assert (await api.get(f"/v1/memories/{gone['id']}")).json()["status"] == "expired"


async def test_states_write_events_and_restore_of_a_superseded_memory_needs_its_successor_forgotten(
    api: Api,
) -> None:
    old = (await api.remember(user_id="u", content="Shell is bash", subject="shell", type="preference"))[
        "memory"
    ]
    new = (await api.remember(user_id="u", content="Shell is fish", subject="shell", type="preference"))[
        "memory"
    ]
    refused = await api.post(f"/v1/memories/{old['id']}/restore")
    assert refused.status_code == 409
    assert new["id"] in refused.json()["detail"]
    assert (await api.post(f"/v1/memories/{new['id']}/archive")).status_code == 200
    assert (
        await api.post(f"/v1/memories/{old['id']}/restore")
    ).status_code == 409  # archived is not forgotten
    assert (await api.post(f"/v1/memories/{new['id']}/restore")).status_code == 200
    await api.delete(f"/v1/memories/{new['id']}")
    restored = await api.post(f"/v1/memories/{old['id']}/restore")
    assert restored.status_code == 200
    assert restored.json()["status"] == "active"
    assert restored.json()["valid_to"] is None  # true again: the correction was withdrawn
    [event] = [e for e in await events(api, old["id"]) if e["kind"] == "restored"]
    assert event["details"] == {"from": "superseded"}
    assert (await api.post(f"/v1/memories/{old['id']}/unpin")).status_code == 409
    assert (await api.post(f"/v1/memories/{uuid.uuid4()}/pin")).status_code == 404
