"""`engram mcp` over stdio: a real subprocess driven by the official MCP SDK's client, in-process against
the test database and as a bridge to a served app."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from app.agent.catalogue import CATALOGUE
from app.lib.console import ExitCode
from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import NewTenant
from tests.support.database import TestDatabase
from tests.support.live_server import LiveServer
from tests.support.mcp_client import NEXTJS, QUESTION, REACT, structured, tool_error
from tests.support.served import serve_env


@pytest.fixture(scope="module")
def served(settings: Settings) -> Iterator[str]:
    with LiveServer(create_app(settings), name="engram-mcp-bridge") as server:
        yield server.url


def _env(database: TestDatabase, tmp_path: Path, key: str) -> dict[str, str]:
    return serve_env(
        database, tmp_path, ENGRAM_API_KEY=key, ENGRAM_EMBEDDER="hash", ENGRAM_REINFORCE_INTERVAL_S="0"
    )


@asynccontextmanager
async def engram_mcp(env: dict[str, str], *args: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "app", "mcp", *args], env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def test_stdio_lists_the_catalogue_and_runs_the_frontend_case(
    database: TestDatabase, tmp_path: Path, new_tenant: NewTenant
) -> None:
    _, key = await new_tenant()
    async with engram_mcp(_env(database, tmp_path, key), "--user", "alice") as client:
        listed = (await client.list_tools()).tools
        react = structured(await client.call_tool("remember", REACT))
        nextjs = structured(await client.call_tool("remember", NEXTJS))
        recall = structured(await client.call_tool("recall", QUESTION))
        bad = tool_error(await client.call_tool("recall", {"query": ""}))
    assert [(t.name, t.description, t.input_schema) for t in listed] == [
        (t.name, t.description, t.input_schema()) for t in CATALOGUE
    ]
    assert nextjs["superseded"] == [react["id"]]
    assert "Next.js" in recall["context"]
    assert "React" not in recall["context"]
    assert [m["id"] for m in recall["memories"]] == [nextjs["id"]]
    assert bad["error"] == "validation_error"


async def test_stdio_second_tenant_sees_nothing_of_the_first(
    database: TestDatabase, tmp_path: Path, new_tenant: NewTenant
) -> None:
    _, first = await new_tenant()
    _, second = await new_tenant()
    async with engram_mcp(_env(database, tmp_path, first), "--user", "alice") as a:
        written = structured(await a.call_tool("remember", REACT))
    async with engram_mcp(_env(database, tmp_path, second), "--user", "alice") as b:
        recall = structured(await b.call_tool("recall", QUESTION))
        history = tool_error(await b.call_tool("history", {"memory_id": written["id"]}))
        export = structured(await b.call_tool("export", {}))
        stats = structured(await b.call_tool("stats", {}))
    assert recall["memories"] == []
    assert history["error"] == "not_found"
    assert export["document"]["memories"] == []
    assert stats["total"] == 0


async def test_stdio_bridge_to_a_running_service(
    served: str, database: TestDatabase, tmp_path: Path, new_tenant: NewTenant
) -> None:
    _, key = await new_tenant()
    _, other = await new_tenant()
    env = _env(database, tmp_path, key)
    async with engram_mcp(env, "--url", served, "--user", "bob") as client:
        listed = (await client.list_tools()).tools
        structured(await client.call_tool("remember", REACT))
        nextjs = structured(await client.call_tool("remember", NEXTJS))
        recall = structured(await client.call_tool("recall", QUESTION))
        bad = tool_error(await client.call_tool("remember", {"content": ""}))
    async with engram_mcp(_env(database, tmp_path, other), "--url", served, "--user", "bob") as stranger:
        unseen = structured(await stranger.call_tool("recall", QUESTION))
    assert [t.name for t in listed] == [t.name for t in CATALOGUE]
    assert [m["id"] for m in recall["memories"]] == [nextjs["id"]]
    assert "React" not in recall["context"]
    assert bad["error"] == "validation_error"
    assert unseen["memories"] == []


@pytest.mark.parametrize("remote", [False, True])
def test_stdio_refuses_a_wrong_key_at_start(
    remote: bool, served: str, database: TestDatabase, tmp_path: Path
) -> None:
    args = [sys.executable, "-m", "app", "mcp", "--json", *(["--url", served] if remote else [])]
    done = subprocess.run(
        args,
        env=_env(database, tmp_path, "egm_wrong"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == ExitCode.AUTH, done.stderr
    assert b'"unauthorized"' in done.stderr
    assert done.stdout == b""
