"""Embedder swap: rows of the old model are never ranked by cosine, stats count them, and re-embedding
(HTTP and CLI; batched, resumable, to another dimension) brings them back into vector recall."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.cli import main
from app.lib.console import ExitCode
from app.lib.settings import Settings
from app.tenancy import admin
from tests.conftest import Api, running_client
from tests.support.database import TestDatabase

USER = "swap-user"
FACTS = [
    "The staging database runs PostgreSQL sixteen",
    "Deployments go through the Jenkins pipeline",
    "The team standup happens at nine thirty",
    "Invoices are archived in the finance bucket",
]
# A misspelling: no full-text match ('postgress' is not 'postgresql'), but hash vectors share trigrams.
TYPO_QUERY = "postgress"


@pytest.fixture
def swapped_settings(settings: Settings) -> Settings:
    """The same database with another embedder: hash vectors of 256 dimensions (`hash-v1-256`)."""
    return settings.model_copy(update={"hash_dim": 256, "reembed_batch_size": 2})


@pytest.fixture
async def swapped(api: Api, swapped_settings: Settings) -> AsyncIterator[Api]:
    async with running_client(swapped_settings) as client:
        yield Api(client, api.key, api.tenant_id)


async def seed(api: Api, user: str = USER) -> list[str]:
    response = await api.post(
        "/v1/memories/batch", {"items": [{"user_id": user, "content": f} for f in FACTS]}
    )
    assert response.status_code == 201, response.text
    return [r["memory"]["id"] for r in response.json()["results"]]


async def stats(api: Api, **params: Any) -> dict[str, Any]:
    response = await api.get("/v1/stats", **params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_vector_recall_ignores_mismatched_rows_until_they_are_reembedded(
    api: Api, swapped: Api
) -> None:
    ids = await seed(api)
    before = await api.recall(user_id=USER, query=TYPO_QUERY)
    assert [m["memory"]["id"] for m in before["memories"]] == [ids[0]]  # found by cosine alone
    assert before["memories"][0]["components"]["keyword"] == 0
    assert before["memories"][0]["components"]["semantic"] > 0

    assert (await stats(swapped, user_id=USER))["mismatched"] == len(FACTS)
    assert (await stats(swapped))["embed_model"] == "hash-v1-256"
    assert (await stats(api, user_id=USER))["mismatched"] == 0
    assert (await swapped.recall(user_id=USER, query=TYPO_QUERY))["memories"] == []
    keyword = await swapped.recall(user_id=USER, query="PostgreSQL staging database")
    assert [m["memory"]["id"] for m in keyword["memories"]] == [ids[0]]  # keyword ranking still finds it
    assert keyword["memories"][0]["components"]["semantic"] == 0  # ... but never by cosine

    reembed = await swapped.post("/v1/reembed", {})
    assert reembed.status_code == 200, reembed.text
    assert reembed.json() == {"reembedded": len(FACTS), "remaining": 0}
    assert (await stats(swapped, user_id=USER))["mismatched"] == 0
    after = await swapped.recall(user_id=USER, query=TYPO_QUERY)
    assert [m["memory"]["id"] for m in after["memories"]] == [ids[0]]
    assert after["memories"][0]["components"]["semantic"] > 0
    document = (await swapped.get("/v1/export", user_id=USER)).json()
    assert {(m["embed_model"], len(m["embedding"])) for m in document["memories"]} == {("hash-v1-256", 256)}
    assert sum(e["kind"] == "reembedded" for e in document["events"]) == len(FACTS)
    # Swapping back makes them mismatched for the first model, and its recall ignores them in turn.
    assert (await stats(api, user_id=USER))["mismatched"] == len(FACTS)
    assert (await api.recall(user_id=USER, query=TYPO_QUERY))["memories"] == []


async def test_new_writes_after_a_swap_use_the_new_model_and_are_not_mismatched(
    api: Api, swapped: Api
) -> None:
    await seed(api)
    await swapped.remember(user_id=USER, content="Backups run nightly at two")
    assert (await stats(swapped, user_id=USER))["mismatched"] == len(FACTS)
    found = await swapped.recall(user_id=USER, query="nightly backups")
    assert found["memories"][0]["memory"]["embed_model"] == "hash-v1-256"


async def test_reembed_resumes_where_a_limited_run_stopped_and_scopes_to_a_user(
    api: Api, swapped: Api
) -> None:
    await seed(api)
    await seed(api, user="someone-else")
    first = await swapped.post("/v1/reembed", {"user_id": USER, "limit": 3})
    assert first.json() == {"reembedded": 3, "remaining": 1}
    second = await swapped.post("/v1/reembed", {"user_id": USER})
    assert second.json() == {"reembedded": 1, "remaining": 0}
    assert (await stats(swapped, user_id="someone-else"))["mismatched"] == len(FACTS)
    assert (await swapped.post("/v1/reembed")).json() == {"reembedded": len(FACTS), "remaining": 0}


async def test_another_tenants_reembed_leaves_this_tenants_rows_alone(
    api: Api, other_api: Api, swapped_settings: Settings
) -> None:
    await seed(api)
    await seed(other_api)
    async with running_client(swapped_settings) as client:
        theirs = Api(client, other_api.key, other_api.tenant_id)
        mine = Api(client, api.key, api.tenant_id)
        assert (await theirs.post("/v1/reembed", {"user_id": USER})).json()["reembedded"] == len(FACTS)
        assert (await stats(mine, user_id=USER))["mismatched"] == len(FACTS)
        assert (await stats(theirs, user_id=USER))["mismatched"] == 0


@pytest.fixture
async def named(owner_engine: AsyncEngine, client: Any) -> tuple[str, Api]:
    """A tenant created with a known name (the CLI addresses tenants by name)."""
    name = f"cli-{uuid.uuid4().hex[:8]}"
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        created = await admin.create_tenant(session, name)
    return name, Api(client, created.plaintext, created.tenant_id)


def cli_env(monkeypatch: pytest.MonkeyPatch, database: TestDatabase, **extra: str) -> None:
    monkeypatch.setenv("DATABASE_URL", database.owner_url)
    monkeypatch.setenv("ENGRAM_EMBEDDER", "hash")
    for key, value in extra.items():
        monkeypatch.setenv(key, value)


async def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert await asyncio.to_thread(main, list(argv)) == 0
    return capsys.readouterr().out


async def test_cli_reembed_commits_batch_by_batch_and_resumes(
    named: tuple[str, Api],
    database: TestDatabase,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    swapped_settings: Settings,
) -> None:
    name, api = named
    await seed(api)
    cli_env(monkeypatch, database, ENGRAM_HASH_DIM="256")
    out = await run_cli(capsys, "reembed", "--tenant", name, "--limit", "3", "--batch-size", "1")
    assert out.strip() == "reembedded=3"
    async with running_client(swapped_settings) as client:
        swapped = Api(client, api.key, api.tenant_id)
        assert (await stats(swapped, user_id=USER))["mismatched"] == 1
        assert (await run_cli(capsys, "reembed", "--tenant", name)).strip() == "reembedded=1"
        assert (await stats(swapped, user_id=USER))["mismatched"] == 0
        assert (await run_cli(capsys, "reembed", "--tenant", name)).strip() == "reembedded=0"


async def test_cli_export_and_import_move_a_user_between_tenants(
    named: tuple[str, Api],
    api: Api,
    database: TestDatabase,
    owner_engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    name, source = named
    ids = await seed(source)
    cli_env(monkeypatch, database)
    exported = tmp_path / "alice.json"
    await run_cli(capsys, "export", str(exported), "--tenant", name, "--user", USER)
    document = json.loads(exported.read_bytes())
    assert sorted(m["id"] for m in document["memories"]) == sorted(ids)
    markdown = tmp_path / "alice.md"
    await run_cli(capsys, "export", str(markdown), "--tenant", name, "--format", "markdown")
    assert "### fact (4)" in markdown.read_text()

    target = f"cli-{uuid.uuid4().hex[:8]}"
    async with async_sessionmaker(owner_engine)() as session, session.begin():
        created = await admin.create_tenant(session, target)
    out = await run_cli(capsys, "import", str(exported), "--tenant", target)
    assert "imported=4" in out
    assert "mismatched=0" in out
    imported = Api(api.client, created.plaintext, created.tenant_id)
    listing = (await imported.get("/v1/memories", user_id=USER)).json()["items"]
    assert sorted(m["id"] for m in listing) == sorted(ids)
    assert (await run_cli(capsys, "import", str(exported), "--tenant", target)).startswith("imported=0")


async def test_cli_import_of_a_bad_document_fails_and_writes_nothing(
    named: tuple[str, Api],
    database: TestDatabase,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    name, api = named
    await seed(api)
    document = (await api.get("/v1/export", user_id=USER)).json()
    assert (await api.post(f"/v1/users/{USER}/erase", {})).status_code == 200
    document["memories"][2]["status"] = "deleted"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    cli_env(monkeypatch, database)
    assert await asyncio.to_thread(main, ["import", str(bad), "--tenant", name]) == ExitCode.INVALID
    assert "memories[2].status" in capsys.readouterr().err
    assert (await api.get("/v1/memories", user_id=USER)).json()["items"] == []
    assert await asyncio.to_thread(main, ["export", "-", "--tenant", "no-such-tenant"]) == ExitCode.NOT_FOUND
    assert "no tenant named" in capsys.readouterr().err
