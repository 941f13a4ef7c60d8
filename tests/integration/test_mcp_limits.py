"""The tenant's limits hold over `/mcp` as over REST: a tool call is admitted like a request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import NewTenant
from tests.integration.test_limits import count_memories, set_limits
from tests.support.live_server import LiveServer
from tests.support.mcp_client import NEXTJS, QUESTION, REACT, mcp_over_http, structured, tool_error


@pytest.fixture(scope="module")
def served(settings: Settings) -> Iterator[str]:
    with LiveServer(create_app(settings), name="engram-mcp-limits") as server:
        yield server.url


async def test_over_the_rate_a_tool_call_is_a_rate_limited_tool_error(
    served: str, new_tenant: NewTenant, owner_engine: AsyncEngine
) -> None:
    tenant, key = await new_tenant()
    await set_limits(owner_engine, tenant, requests_per_minute=3)
    async with mcp_over_http(served, key) as client:
        results = [await client.call_tool("recall", QUESTION) for _ in range(6)]
    refused = [tool_error(r) for r in results if r.is_error]
    assert refused, "six calls at three a minute: some must be refused"
    assert {e["error"] for e in refused} == {"rate_limited"}
    assert [r.is_error for r in results] == sorted(r.is_error for r in results)  # the bucket empties once


async def test_over_the_memory_quota_remember_is_refused_and_writes_nothing(
    served: str, new_tenant: NewTenant, owner_engine: AsyncEngine
) -> None:
    tenant, key = await new_tenant()
    await set_limits(owner_engine, tenant, max_memories=1)
    async with mcp_over_http(served, key, user="alice") as client:
        structured(await client.call_tool("remember", REACT))
        refused = tool_error(
            await client.call_tool("remember", {**NEXTJS, "subject": "another subject entirely"})
        )
    assert refused["error"] == "memory_quota_exceeded"
    assert await count_memories(owner_engine, tenant) == 1
