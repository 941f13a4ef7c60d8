"""The administration CLI, health endpoints and the OpenAPI document."""

from __future__ import annotations

import asyncio
import gc
import uuid
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.cli import main
from app.lib.console import ExitCode
from app.lib.heap import YOUNG_THRESHOLD
from app.lib.settings import Settings
from app.main import create_app
from tests.support.database import TestDatabase


async def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    # The CLI runs its own event loop, so it runs in a thread beside the test's loop.
    assert await asyncio.to_thread(main, list(argv)) == 0
    return capsys.readouterr().out


async def test_tenant_and_key_lifecycle_through_the_cli(
    database: TestDatabase,
    client: AsyncTestClient[Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", database.owner_url)
    name = f"cli-{uuid.uuid4().hex[:8]}"
    first = (await run_cli(capsys, "tenant", "create", name)).split()[-1]
    second = (await run_cli(capsys, "key", "create", name, "--name", "ci")).split()[-1]
    assert first.startswith("egm_")
    assert second.startswith("egm_")
    assert first != second

    listing = await run_cli(capsys, "key", "list", name)
    assert first not in listing  # secrets are never listed
    assert listing.count(name) == 2

    for key in (first, second):
        response = await client.get("/v1/stats", headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200
    prefix = "_".join(second.split("_")[:2])
    await run_cli(capsys, "key", "revoke", prefix)
    revoked = await client.get("/v1/stats", headers={"Authorization": f"Bearer {second}"})
    assert revoked.status_code == 401
    still = await client.get("/v1/stats", headers={"Authorization": f"Bearer {first}"})
    assert still.status_code == 200


async def test_creating_a_duplicate_tenant_fails_cleanly(
    database: TestDatabase, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", database.owner_url)
    name = f"dup-{uuid.uuid4().hex[:8]}"
    await run_cli(capsys, "tenant", "create", name)
    assert await asyncio.to_thread(main, ["tenant", "create", name]) == ExitCode.CONFLICT
    assert "already exists" in capsys.readouterr().err


async def test_health_ready_and_openapi(client: AsyncTestClient[Any]) -> None:
    assert (await client.get("/health")).json() == {"status": "ok"}
    ready = await client.get("/ready")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    schema = (await client.get("/schema/openapi.json")).json()
    assert {"/v1/memories", "/v1/recall", "/v1/forget", "/v1/stats"} <= set(schema["paths"])


async def test_the_served_app_sets_the_collector_up_for_serving(settings: Settings) -> None:
    gc.unfreeze()
    default = gc.get_threshold()
    try:
        async with AsyncTestClient(app=create_app(settings)) as client:
            assert (await client.get("/health")).status_code == 200
            assert gc.get_freeze_count() == 0  # the default, for tests that build many apps
            assert gc.get_threshold() == default
        async with AsyncTestClient(app=create_app(settings, serving=True)) as client:
            assert (await client.get("/health")).status_code == 200
            assert gc.get_freeze_count() > 0
            assert gc.get_threshold() == (YOUNG_THRESHOLD, *default[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*default)
