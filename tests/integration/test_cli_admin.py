"""`engram tenant list|rename|delete` and `engram key ...`: exit codes, --json, and what deleting removes."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.cli import main
from app.lib.console import ExitCode
from tests.conftest import Api
from tests.support.database import TestDatabase
from tests.support.tables import tenant_name

TABLES = ("tenants", "api_keys", "memories", "memory_events", "messages", "usage_events", "dream_proposals")


async def tenant_rows(owner_engine: AsyncEngine, tenant_id: uuid.UUID) -> dict[str, list[str]]:
    """Every row one tenant owns, by table (filtered by id: the owner may bypass RLS)."""
    rows: dict[str, list[str]] = {}
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant_id)})
        for table in TABLES:
            column = "id" if table == "tenants" else "tenant_id"
            query = text(f"SELECT to_jsonb(t)::text FROM {table} t WHERE {column} = :t ORDER BY 1")
            rows[table] = [r[0] for r in await conn.execute(query, {"t": tenant_id})]
    return rows


@pytest.fixture
def cli(database: TestDatabase, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    monkeypatch.setenv("DATABASE_URL", database.owner_url)

    async def run(*argv: str) -> tuple[int, str, str]:
        # The CLI runs its own event loop, so it runs in a thread beside the test's loop.
        code = await asyncio.to_thread(main, list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


async def test_tenant_list_shows_every_tenant_with_its_key_counts(cli: Any) -> None:
    name = f"list-{uuid.uuid4().hex[:8]}"
    code, out, _ = await cli("tenant", "create", name, "--json")
    assert code == ExitCode.OK
    created = json.loads(out)
    assert created["api_key"].startswith("egm_")
    await cli("key", "create", name)
    await cli("key", "revoke", created["key_id"])

    code, out, _ = await cli("tenant", "list", "--json")
    [row] = [t for t in json.loads(out) if t["name"] == name]
    assert (row["id"], row["live_keys"], row["revoked_keys"]) == (created["tenant_id"], 1, 1)
    code, text, _ = await cli("tenant", "list")
    assert code == ExitCode.OK
    assert f"{name}" in text
    assert "1 live, 1 revoked" in text


async def test_rename_keeps_the_keys_and_refuses_a_taken_or_unknown_name(
    cli: Any, client: AsyncTestClient[Any]
) -> None:
    old, new, taken = (f"{p}-{uuid.uuid4().hex[:8]}" for p in ("old", "new", "taken"))
    key = json.loads((await cli("tenant", "create", old, "--json"))[1])["api_key"]
    await cli("tenant", "create", taken)

    code, out, _ = await cli("tenant", "rename", old, new, "--json")
    assert (code, json.loads(out)["name"]) == (ExitCode.OK, new)
    response = await client.get("/v1/stats", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200
    assert (await cli("key", "create", new))[0] == ExitCode.OK

    code, _, err = await cli("tenant", "rename", new, taken)
    assert (code, "already exists" in err) == (ExitCode.CONFLICT, True)
    code, _, err = await cli("tenant", "rename", old, "whatever", "--json")
    assert code == ExitCode.NOT_FOUND
    assert json.loads(err) == {"error": "not_found", "detail": f"no tenant named {old!r}"}
    assert (await cli("tenant", "rename", new, "  "))[0] == ExitCode.INVALID


async def test_delete_needs_yes_then_removes_the_tenant_and_only_it(
    cli: Any, api: Api, other_api: Api, owner_engine: AsyncEngine
) -> None:
    await api.remember(user_id="u", content="Use React for the frontend", subject="frontend")
    await api.remember(user_id="u", content="Use Next.js for the frontend", subject="frontend")
    assert (await api.post("/v1/chat", {"user_id": "u", "message": "I prefer tea"})).status_code == 200
    await other_api.remember(user_id="u", content="The other tenant's fact")
    others_before = await tenant_rows(owner_engine, other_api.tenant_id)
    name = await tenant_name(owner_engine, api.tenant_id)

    code, _, err = await cli("tenant", "delete", name)
    assert code == ExitCode.USAGE
    assert "--yes" in err
    assert (await api.get("/v1/stats")).status_code == 200  # nothing happened

    code, out, _ = await cli("tenant", "delete", name, "--yes", "--json")
    receipt = json.loads(out)
    assert code == ExitCode.OK
    assert receipt["id"] == str(api.tenant_id)
    assert (receipt["memories"], receipt["keys"]) == (3, 1)
    assert receipt["messages"] >= 1  # the chat's turns
    assert receipt["events"] >= 3
    assert receipt["usage_events"] >= 1
    assert (await api.get("/v1/stats")).status_code == 401  # its key went with it
    assert await tenant_rows(owner_engine, api.tenant_id) == {table: [] for table in TABLES}
    assert await tenant_rows(owner_engine, other_api.tenant_id) == others_before
    assert (await other_api.get("/v1/stats")).json()["total"] == 1

    assert (await cli("tenant", "delete", name, "--yes"))[0] == ExitCode.NOT_FOUND


async def test_key_commands_speak_json_and_never_show_a_secret(cli: Any) -> None:
    name = f"keys-{uuid.uuid4().hex[:8]}"
    first = json.loads((await cli("tenant", "create", name, "--json"))[1])
    code, out, _ = await cli("key", "create", name, "--name", "ci", "--json")
    second = json.loads(out)
    assert code == ExitCode.OK
    code, out, _ = await cli("key", "list", name, "--json")
    keys = json.loads(out)
    assert {k["name"] for k in keys} == {"default", "ci"}
    assert {k["id"] for k in keys} == {first["key_id"], second["key_id"]}
    assert first["api_key"] not in out
    assert second["api_key"] not in out
    assert all(k["revoked_at"] is None for k in keys)

    code, out, _ = await cli("key", "revoke", second["key_id"], "--json")
    assert (code, json.loads(out)["revoked"]) == (ExitCode.OK, 1)
    assert (await cli("key", "revoke", second["key_id"]))[0] == ExitCode.NOT_FOUND  # already revoked
    assert (await cli("key", "create", "no-such-tenant"))[0] == ExitCode.NOT_FOUND


async def test_usage_errors_and_an_unreachable_database_have_their_own_codes(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = await cli("tenant", "frobnicate")
    assert code == ExitCode.USAGE
    assert "invalid choice" in err
    code, _, err = await cli("key", "--json")
    assert code == ExitCode.USAGE
    assert json.loads(err)["error"] == "usage"
    monkeypatch.setenv("DATABASE_URL", "postgresql+asyncpg://nobody@127.0.0.1:9/none")
    code, _, err = await cli("tenant", "list")
    assert code == ExitCode.UNAVAILABLE
    assert "cannot reach the database" in err


async def test_migrate_and_maintenance_speak_json_and_a_bad_setting_is_a_usage_error(
    cli: Any, api: Api, owner_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = await cli("migrate", "--json")
    assert (code, json.loads(out)) == (ExitCode.OK, {"migrated": True, "database": "DATABASE_URL"})
    name = await tenant_name(owner_engine, api.tenant_id)
    code, out, _ = await cli("maintenance", "--tenant", name, "--json")
    [report] = json.loads(out)
    assert (code, report["tenant"], report["expired"], report["busy"]) == (ExitCode.OK, name, 0, False)

    monkeypatch.setenv("ENGRAM_DB_POOL_SIZE", "many")
    code, _, err = await cli("tenant", "list")
    assert code == ExitCode.USAGE
    assert "invalid configuration: db_pool_size" in err
