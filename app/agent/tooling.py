"""What a tool is: name, description, argument struct, handler; and the catalogue that holds them.

The function-calling schema a model is offered, and the input schema an MCP client is shown, are both
`Tool.input_schema()`: msgspec's JSON schema of the argument struct, with the field descriptions written
beside the fields. Arguments are untrusted input: `Tool.parse` validates them with the same struct.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from app.agent.providers.base import ChatProvider, ToolCall
from app.agent.providers.base import Tool as ToolSchema
from app.context import RequestContext
from app.lib.errors import EngramError
from app.memory.service import MemoryService
from app.vocabulary import MemoryType

TYPES = [t.value for t in MemoryType]
# An invented type is clamped to "fact" rather than refused (the fact matters more than its label), so
# the field is a string that the schema still shows as the enum.
TypeName = Annotated[str, msgspec.Meta(extra_json_schema={"enum": TYPES})]
Short = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class ToolArgumentError(ValueError):
    """A call of a tool that does not exist, or with arguments that do not fit its schema."""


class Arguments(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool's arguments; defaults are left out when a call is written out."""


@dataclass(frozen=True, slots=True)
class ToolScope:
    """What every tool call of one chat request (or one MCP session) shares: whose memory, and where a
    write comes from."""

    user_id: str
    project_id: str | None
    session_id: str | None
    source_model: str
    source_message_id: uuid.UUID | None
    token_budget: int
    include_sensitive: bool = False
    agent_id: str | None = None  # the agent the session acts as (set by the request, never by the model)


@dataclass(frozen=True, slots=True)
class ToolEnv:
    """A handler's world: the request's context, its memory service, the scope, and the app's model
    (dreaming asks it when it is online)."""

    ctx: RequestContext
    memory: MemoryService
    scope: ToolScope
    chat: ChatProvider | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    result: dict[str, Any]
    memory_ids: list[uuid.UUID] = field(default_factory=list)  # memories put in front of the model
    error: EngramError | None = None  # the call was refused: `result` says why, in words

    @classmethod
    def refused(cls, tool: str, exc: EngramError) -> ToolResult:
        return cls({"tool": tool, "error": exc.detail, "code": exc.code}, error=exc)


Handler = Callable[[ToolEnv, list[Any]], Awaitable[list[ToolResult]]]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    arguments: type[Arguments]
    run: Handler  # every call of this tool in one turn, in order -> one result each
    phase: int  # tools of a turn run in phase order
    # Fields the schema marks required although the struct has a default for them: the model is asked
    # to give them, and a call that does not is still served (with the default).
    asks_for: tuple[str, ...] = ()
    # Offered to the chat model. Tools for people and MCP clients (import, approve ...) are not: the
    # model never sees them, and the executor refuses a call of one.
    for_model: bool = True

    def input_schema(self) -> dict[str, Any]:
        """The arguments' JSON schema (an object schema, no `$defs` at the top)."""
        generated = msgspec.json.schema(self.arguments)
        parameters = dict(generated["$defs"].pop(self.arguments.__name__))
        parameters.pop("title", None)
        parameters["required"] = [
            *parameters.get("required", []),
            *(f for f in self.asks_for if f not in parameters.get("required", [])),
        ]
        if generated["$defs"]:  # nested structs (none today): keep their definitions reachable
            parameters["$defs"] = generated["$defs"]
        return parameters

    def schema(self) -> ToolSchema:
        """The function-calling definition (OpenAI's `tools` entry)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema(),
            },
        }

    def parse(self, arguments: Mapping[str, Any]) -> Arguments:
        try:
            return msgspec.convert(dict(arguments), self.arguments)
        except msgspec.ValidationError as exc:
            raise ToolArgumentError(f"invalid arguments for {self.name}: {exc}") from None


class Catalogue:
    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools = {t.name: t for t in tools}
        self._by_arguments = {t.arguments: t for t in tools}

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def for_model(self) -> Catalogue:
        """The tools offered to the chat model."""
        return Catalogue([t for t in self if t.for_model])

    def schemas(self) -> list[ToolSchema]:
        return [t.schema() for t in self]

    def tool(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolArgumentError(f"unknown tool {name!r}; available: {', '.join(self._tools)}")
        return tool

    def parse(self, name: str, arguments: Mapping[str, Any]) -> Arguments:
        """A call's arguments, validated; an unknown tool or a bad value raises `ToolArgumentError`."""
        return self.tool(name).parse(arguments)

    def call(self, call_id: str, arguments: Arguments) -> ToolCall:
        """A call of the tool that takes `arguments` (how the offline model writes its calls)."""
        tool = self._by_arguments[type(arguments)]
        payload = msgspec.to_builtins(arguments)
        return ToolCall(
            id=call_id,
            name=tool.name,
            arguments=payload,
            raw_arguments=json.dumps(payload, ensure_ascii=False),
        )


async def each(name: str, calls: list[Any], run: Callable[[Any], Awaitable[ToolResult]]) -> list[ToolResult]:
    """One call at a time; a refused call becomes an error result (the model reads it, MCP reports it)."""
    results = []
    for args in calls:
        try:
            results.append(await run(args))
        except EngramError as exc:
            results.append(ToolResult.refused(name, exc))
    return results
