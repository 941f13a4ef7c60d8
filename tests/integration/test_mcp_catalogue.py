"""The agent loop and the MCP server list their tools from one definition, the catalogue."""

from __future__ import annotations

import pytest
from mcp import Client

from app.agent.catalogue import CATALOGUE, MODEL_CATALOGUE, Tool, ToolArgumentError, ToolResult
from app.agent.loop import TOOLS as AGENT_LOOP_TOOLS
from app.agent.tooling import Arguments
from app.mcp.server import build_server


class Unreachable:
    """Listing tools runs nothing."""

    async def run(self, tool: Tool, arguments: Arguments) -> ToolResult:
        raise AssertionError(f"{tool.name} ran")


async def test_agent_loop_and_mcp_server_offer_the_same_tools_from_the_catalogue() -> None:
    async with Client(build_server(Unreachable())) as client:
        served = {t.name: t for t in (await client.list_tools()).tools}
    agent = {t["function"]["name"]: t["function"] for t in AGENT_LOOP_TOOLS}

    # The MCP server serves the whole catalogue; the model is offered the tools marked for it.
    assert list(served) == [t.name for t in CATALOGUE]
    assert list(agent) == [t.name for t in CATALOGUE if t.for_model]
    assert {"remember", "recall", "forget"} <= set(agent)
    # A tool both offer is the same tool: name, description and input schema.
    for name, offered in agent.items():
        assert served[name].description == offered["description"]
        assert served[name].input_schema == offered["parameters"]
    for tool in CATALOGUE:
        assert served[tool.name].input_schema == tool.input_schema()
        assert served[tool.name].description == tool.description


@pytest.mark.parametrize("name", [t.name for t in CATALOGUE if not t.for_model])
def test_the_model_cannot_call_a_tool_it_is_not_offered(name: str) -> None:
    with pytest.raises(ToolArgumentError, match="unknown tool"):
        MODEL_CATALOGUE.parse(name, {})


async def test_bad_arguments_never_reach_a_handler() -> None:
    async with Client(build_server(Unreachable())) as client:
        results = [
            await client.call_tool("remember", {}),
            await client.call_tool("remember", {"content": "x", "importance": 7}),
            await client.call_tool("recall", {"query": "x" * 2001}),
            await client.call_tool("history", {"memory_id": 3}),
            await client.call_tool("import", {"document": "not an object"}),
            await client.call_tool("nope", {"a": 1}),
        ]
    for result in results:
        assert result.is_error
        assert result.structured_content["error"] == "validation_error"
