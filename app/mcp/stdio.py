"""`engram mcp`: the MCP server over stdio, for desktop assistants and IDE agents that start a command.

The key is `ENGRAM_API_KEY`. Two ways to reach the memories:
- in-process (no `--url`): the local store, with the same database settings as `engram serve` (the
  embedded PostgreSQL when DATABASE_URL is unset); each call is one authenticated unit of work;
- remote (`--url` or ENGRAM_URL given to the command): a stdio bridge to a running service's `/mcp`,
  through the SDK's streamable-HTTP client with the key as the bearer token. The service runs the same
  catalogue, so the bridge lists and forwards; it holds no tool definitions of its own.

Stdout is the protocol's channel: logs go to stderr (as everywhere in Engram), and the SDK's
`stdio_server` moves anything else printing to stdout out of the way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.agent.providers.factory import build_chat_provider
from app.agent.providers.offline import OfflineModel
from app.db.session import create_engine
from app.embeddings.factory import build_embedder
from app.lib.clock import SystemClock
from app.lib.errors import Unauthorized
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.main import service_database_url
from app.mcp.local import Caller, LocalRunner
from app.mcp.server import INSTRUCTIONS, SERVER_NAME, build_server
from app.state import Services
from app.tenancy.auth import authenticate


async def _serve(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


@asynccontextmanager
async def local_services(settings: Settings) -> AsyncIterator[Services]:
    """The clients `create_app`'s lifespan builds, for one stdio process (recall reinforces inline)."""
    services = Services(settings=settings, clock=SystemClock(), counter=TokenCounter())
    services.embedder = await build_embedder(settings)
    services.chat = build_chat_provider(settings, services.counter)
    services.offline = OfflineModel(services.counter)
    try:
        yield services
    finally:
        await services.embedder.aclose()
        await services.chat.aclose()


async def serve_local(settings: Settings, caller: Caller) -> None:
    engine = create_engine(service_database_url(settings), pool_size=2, max_overflow=2)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    try:
        async with sessions() as session, session.begin():  # a wrong key fails here, not per call
            await authenticate(session, f"Bearer {caller.key}")
        async with local_services(settings) as services:
            await _serve(build_server(LocalRunner(services, sessions, lambda: caller)))
    finally:
        await engine.dispose()


def bridge(upstream: Client) -> Server[Any]:
    """A stdio server that lists and calls the tools of a running service's `/mcp`."""

    async def list_tools(
        _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await upstream.list_tools()

    async def call_tool(
        _: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await upstream.call_tool(params.name, params.arguments or {})

    return Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_remote(url: str, caller: Caller, seconds_per_call: float) -> None:
    headers = {"Authorization": f"Bearer {caller.key}", "X-Engram-User": caller.user_id}
    if caller.agent_id is not None:
        headers["X-Engram-Agent"] = caller.agent_id
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(seconds_per_call)) as http:
        probe = await http.post(
            f"{url.rstrip('/')}/mcp",
            json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        if probe.status_code == 401:  # before the client starts: a clear message, the CLI's exit code
            raise Unauthorized("the service refused the API key (ENGRAM_API_KEY)")
        async with Client(streamable_http_client(f"{url.rstrip('/')}/mcp", http_client=http)) as upstream:
            await _serve(bridge(upstream))
