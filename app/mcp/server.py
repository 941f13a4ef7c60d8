"""The MCP server: the tool catalogue served with the official SDK's low-level `Server`.

The low-level server, not `MCPServer`: `MCPServer` derives a tool's input schema from a function's
signature with pydantic, while the catalogue's schema is its argument struct's (the one the chat model
is offered). Serving the catalogue's own schema keeps one definition; the arguments are validated with
the same struct as a model's call. Each call runs through a `Runner` (in-process, or forwarded to a
running service), and its result comes back as structured content plus the same JSON as text. A
refused call is an MCP tool error (`isError`) carrying the API's error shape `{"error", "detail"}`.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from app.agent.catalogue import CATALOGUE, Catalogue, Tool, ToolArgumentError, ToolResult
from app.agent.tooling import Arguments
from app.lib.errors import EngramError, ValidationFailed
from app.lib.logging import get_logger
from app.lib.redaction import redact

log = get_logger("engram.mcp")

SERVER_NAME = "engram"
INSTRUCTIONS = (
    "Engram is the user's long-term memory. Recall before a decision that may depend on the user's "
    "preferences, constraints or earlier decisions; remember durable facts with a short subject naming "
    "the attribute (a newer memory in the same subject replaces the old one)."
)


class Runner(Protocol):
    """Runs one validated call of a tool for the caller of this request."""

    async def run(self, tool: Tool, arguments: Arguments) -> ToolResult: ...


def tool_list(catalogue: Catalogue = CATALOGUE) -> list[types.Tool]:
    """Every tool of the catalogue, with the catalogue's name, description and input schema."""
    return [
        types.Tool(name=t.name, description=t.description, input_schema=t.input_schema()) for t in catalogue
    ]


def success(result: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(result, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=result
    )


def failure(code: str, detail: str) -> types.CallToolResult:
    """A tool error in the API's error shape; the detail is redacted as the API's is."""
    error = {"error": code, "detail": redact(detail).text}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(error, ensure_ascii=False))],
        structured_content=error,
        is_error=True,
    )


def refusal(exc: EngramError) -> types.CallToolResult:
    return failure(exc.code, exc.detail)


def build_server(runner: Runner, catalogue: Catalogue = CATALOGUE, version: str = "") -> Server[Any]:
    tools = tool_list(catalogue)

    async def list_tools(
        _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        _: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            tool = catalogue.tool(params.name)
            arguments = tool.parse(params.arguments or {})
        except ToolArgumentError as exc:
            return refusal(ValidationFailed(str(exc)))
        try:
            result = await runner.run(tool, arguments)
        except EngramError as exc:
            return refusal(exc)
        except Exception as exc:  # the API's last handler's twin: logged, and never the text
            # An exception's text may carry SQL or the caller's data: the client gets the code only.
            log.error("mcp_tool_failed", tool=tool.name, error_type=type(exc).__name__, exc_info=exc)
            return failure("internal_error", "an unexpected error occurred; it has been logged")
        if result.error is not None:
            return refusal(result.error)
        return success(result.result)

    return Server(
        SERVER_NAME,
        version=version,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
