"""The agent's tools, each defined once: name, description, argument struct and handler.

The function-calling schema a model is offered is derived from the argument struct (msgspec's JSON
schema, with the field descriptions written beside the fields); the executor validates a call's
arguments with the same struct, as untrusted input, and dispatches to the handler; the offline model
builds its calls from the structs too (`CATALOGUE.call`). A handler receives every call of its tool in
one model turn, in order, so all `remember` calls of a turn are written as one batch (one embedding
call), and tools run in `phase` order: forgets, then remembers, then recalls.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from app.agent.providers.base import Tool as ToolSchema
from app.agent.providers.base import ToolCall
from app.context import RequestContext
from app.lib.errors import EngramError
from app.memory.corrections import supersede_mentioned
from app.memory.models import RecallInput, RememberInput
from app.memory.service import MemoryService
from app.vocabulary import MemoryType, Source

TYPES = [t.value for t in MemoryType]
# An invented type is clamped to "fact" rather than refused (the fact matters more than its label), so
# the field is a string that the schema still shows as the enum.
TypeName = Annotated[str, msgspec.Meta(extra_json_schema={"enum": TYPES})]
Short = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class ToolArgumentError(ValueError):
    """The model called a tool that does not exist, or with arguments that do not fit its schema."""


class Arguments(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool's arguments; defaults are left out when a call is written out."""


class RememberArgs(Arguments):
    content: Annotated[
        str,
        msgspec.Meta(min_length=1, max_length=8000, description="The fact, self-contained, one sentence."),
    ]
    type: TypeName = MemoryType.FACT.value
    subject: Annotated[Short, msgspec.Meta(description="The attribute this fact is about.")] | None = None
    importance: Unit = 0.5
    replaces: (
        Annotated[
            Short, msgspec.Meta(description="For a correction: the old value this replaces (e.g. 'matcha').")
        ]
        | None
    ) = None
    project_id: Short | None = None


class RecallArgs(Arguments):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    types: list[TypeName] | None = None
    project_id: Short | None = None


class ForgetArgs(Arguments):
    memory_id: uuid.UUID | None = None
    description: (
        Annotated[str, msgspec.Meta(max_length=2000, description="What to forget, e.g. 'my address'.")] | None
    ) = None
    subject: Short | None = None
    project_id: Short | None = None


@dataclass(frozen=True, slots=True)
class ToolScope:
    """What every tool call of one chat request shares: whose memory, and where a write comes from."""

    user_id: str
    project_id: str | None
    session_id: str | None
    source_model: str
    source_message_id: uuid.UUID | None
    token_budget: int
    include_sensitive: bool = False


@dataclass(frozen=True, slots=True)
class ToolEnv:
    """A handler's world: the request's context, its memory service, and the chat's scope."""

    ctx: RequestContext
    memory: MemoryService
    scope: ToolScope


@dataclass(frozen=True, slots=True)
class ToolResult:
    result: dict[str, Any]
    memory_ids: list[uuid.UUID] = field(default_factory=list)  # memories put in front of the model


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

    def schema(self) -> ToolSchema:
        """The function-calling definition (OpenAI's `tools` entry)."""
        generated = msgspec.json.schema(self.arguments)
        parameters = dict(generated["$defs"][self.arguments.__name__])
        parameters.pop("title", None)
        parameters["required"] = [
            *parameters.get("required", []),
            *(f for f in self.asks_for if f not in parameters.get("required", [])),
        ]
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
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


async def _each(
    env: ToolEnv, name: str, calls: list[Any], run: Callable[[Any], Awaitable[ToolResult]]
) -> list[ToolResult]:
    """One call at a time; a refused call becomes an error result the model can read."""
    results = []
    for args in calls:
        try:
            results.append(await run(args))
        except EngramError as exc:
            results.append(ToolResult({"tool": name, "error": exc.detail}))
    return results


async def _remember(env: ToolEnv, calls: list[RememberArgs]) -> list[ToolResult]:
    """All of a turn's facts in one batch (one embedding call, whatever their number)."""
    scope = env.scope
    items = [
        RememberInput(
            user_id=scope.user_id,
            content=a.content,
            type=MemoryType.or_fact(a.type),
            subject=a.subject,
            project_id=a.project_id or scope.project_id,
            session_id=scope.session_id,
            importance=a.importance,
            source=Source.AGENT,
            source_model=scope.source_model,
            source_message_id=scope.source_message_id,
        )
        for a in calls
    ]
    try:
        written = await env.memory.remember_many(items)
    except EngramError as exc:
        return [ToolResult({"tool": "remember", "error": exc.detail}) for _ in calls]
    for a, r in zip(calls, written, strict=True):
        if a.replaces and r.action != "deduplicated" and not r.superseded:
            old = await supersede_mentioned(env.ctx, r.memory, a.replaces)
            if old is not None:
                r.superseded.append(old.id)
    return [
        ToolResult(
            {
                "tool": "remember",
                "id": str(r.memory.id),
                "action": r.action,
                "content": r.memory.content,
                "superseded": [str(i) for i in r.superseded],
                "proposals": [str(i) for i in r.proposals],
            }
        )
        for r in written
    ]


async def _recall(env: ToolEnv, calls: list[RecallArgs]) -> list[ToolResult]:
    async def one(args: RecallArgs) -> ToolResult:
        scope = env.scope
        types = [t for t in map(MemoryType.of, args.types or []) if t is not None]
        result = await env.memory.recall(
            RecallInput(
                user_id=scope.user_id,
                query=args.query,
                project_id=args.project_id or scope.project_id,
                token_budget=scope.token_budget,
                types=types or None,
                include_sensitive=scope.include_sensitive,
            )
        )
        memories = [
            {
                "id": str(m.memory.id),
                "type": m.memory.type,
                "subject": m.memory.subject,
                "content": m.memory.content,
            }
            for m in result.memories
        ]
        return ToolResult(
            {"tool": "recall", "context": result.context, "memories": memories},
            [m.memory.id for m in result.memories],
        )

    return await _each(env, "recall", calls, one)


async def _forget(env: ToolEnv, calls: list[ForgetArgs]) -> list[ToolResult]:
    async def one(args: ForgetArgs) -> ToolResult:
        forgotten = await _forget_one(env, args)
        described = args.description or args.subject
        return ToolResult(
            {"tool": "forget", "forgotten": [str(i) for i in forgotten], "description": described}
        )

    return await _each(env, "forget", calls, one)


async def _forget_one(env: ToolEnv, args: ForgetArgs) -> list[uuid.UUID]:
    """By id; else by slot; else the closest memory; else recall the description, forget the top hit."""
    memory, user, why = env.memory, env.scope.user_id, "forgotten by the agent"
    forgotten: list[uuid.UUID] = []
    if args.memory_id is not None:
        forgotten = await memory.forget(user, memory_id=args.memory_id, reason=why)
    if not forgotten and args.subject:
        forgotten = await _try_forget(env, subject=args.subject)
    if not forgotten and args.description:
        forgotten = await _try_forget(env, query=args.description)
    if not forgotten and args.description:
        recalled = await memory.recall(
            RecallInput(
                user_id=user, query=args.description, project_id=env.scope.project_id, token_budget=512
            )
        )
        # Only a memory that shares a word with the description: never the nearest unrelated one.
        hits = [m for m in recalled.memories if m.components.get("keyword", 0.0) > 0]
        if hits:
            forgotten = await memory.forget(user, memory_id=hits[0].memory.id, reason=why)
    return forgotten


async def _try_forget(
    env: ToolEnv, *, subject: str | None = None, query: str | None = None
) -> list[uuid.UUID]:
    try:
        return await env.memory.forget(
            env.scope.user_id, subject=subject, query=query, reason="forgotten by the agent"
        )
    except EngramError:  # e.g. a subject too generic to be a slot: try the next way
        return []


CATALOGUE = Catalogue(
    [
        Tool(
            "remember",
            "Store a durable fact about the user or their work (a preference, decision, constraint, "
            "deadline ...). Use a short subject naming the attribute (e.g. 'theme', 'frontend "
            "framework'); a newer memory in the same subject replaces the old one.",
            RememberArgs,
            _remember,
            phase=1,
            asks_for=("content", "type"),
        ),
        Tool(
            "recall",
            "Search the user's long-term memory. Call it before any decision that may depend "
            "on the user's preferences, constraints or earlier decisions.",
            RecallArgs,
            _recall,
            phase=2,
        ),
        Tool(
            "forget",
            "Forget memories the user asks to remove: by id, or by describing them.",
            ForgetArgs,
            _forget,
            phase=0,
        ),
    ]
)
