"""The official MCP SDK's client against Engram: over streamable HTTP with a key, or a stdio subprocess."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

# The frontend case of the core issue, as MCP tool calls.
REACT = {
    "content": "Use React and Vite for the frontend",
    "type": "decision",
    "subject": "frontend framework",
}
NEXTJS = {
    "content": "We are switching to Next.js for the frontend",
    "type": "decision",
    "subject": "frontend framework",
}
QUESTION = {"query": "which frontend framework do we use?"}


@asynccontextmanager
async def mcp_over_http(
    base_url: str,
    key: str | None,
    *,
    user: str | None = None,
    headers: dict[str, str] | None = None,
    query: str = "",
) -> AsyncIterator[Client]:
    sent = dict(headers or {})
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    if user is not None:
        sent["X-Engram-User"] = user
    async with (
        httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(60.0)) as http,
        Client(streamable_http_client(f"{base_url}/mcp{query}", http_client=http)) as client,
    ):
        yield client


def structured(result: CallToolResult) -> dict[str, Any]:
    """A successful call's structured content, checked against its text twin."""
    assert not result.is_error, result.content
    content: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == content  # type: ignore[union-attr]
    return content


def tool_error(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error, result.structured_content
    error: dict[str, Any] = result.structured_content
    assert set(error) == {"error", "detail"}
    return error
