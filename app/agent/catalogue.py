"""The agent's tools and the MCP server's, each defined once: name, description, argument struct and
handler (the types are in `app.agent.tooling`).

The function-calling schema a model is offered and the MCP server's tool list are both derived from
this catalogue: the model sees `CATALOGUE.for_model()` (remember, recall, forget), an MCP client sees
every tool. The executor validates a call's arguments with the tool's struct, as untrusted input, and
dispatches to the handler; the offline model builds its calls from the structs too (`CATALOGUE.call`).
A handler receives every call of its tool in one model turn, in order, so all `remember` calls of a
turn are written as one batch (one embedding call), and tools run in `phase` order: forgets, then
remembers, then recalls.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from app.agent import operation_tools as ops
from app.agent.tooling import (
    Arguments,
    Catalogue,
    Handler,
    Short,
    Tool,
    ToolArgumentError,
    ToolEnv,
    ToolResult,
    ToolScope,
    TypeName,
    Unit,
    each,
)
from app.lib.errors import EngramError, MemoryQuotaExceeded
from app.memory.corrections import supersede_mentioned
from app.memory.models import RecallInput, RecallResult, RememberInput
from app.memory.recall import MAX_BUDGET
from app.vocabulary import AsOfKind, MemoryType, Source

__all__ = [
    "CATALOGUE",
    "MODEL_CATALOGUE",
    "Arguments",
    "Catalogue",
    "ForgetArgs",
    "RecallArgs",
    "RememberArgs",
    "Tool",
    "ToolArgumentError",
    "ToolEnv",
    "ToolResult",
    "ToolScope",
]


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
    token_budget: (
        Annotated[
            int,
            msgspec.Meta(ge=1, le=MAX_BUDGET, description="Tokens the returned context may use at most."),
        ]
        | None
    ) = None
    as_of: (
        Annotated[
            datetime,
            msgspec.Meta(
                tz=True,
                description="Recall what was current at this instant (RFC 3339 with an offset).",
            ),
        ]
        | None
    ) = None
    as_of_kind: Annotated[
        Literal["valid", "recorded"],
        msgspec.Meta(description="valid: what held then, as known now; recorded: what Engram held then."),
    ] = "valid"


class ForgetArgs(Arguments):
    memory_id: uuid.UUID | None = None
    description: (
        Annotated[str, msgspec.Meta(max_length=2000, description="What to forget, e.g. 'my address'.")] | None
    ) = None
    subject: Short | None = None
    project_id: Short | None = None


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
            agent_id=scope.agent_id,
        )
        for a in calls
    ]
    try:
        written = await env.memory.remember_many(items)
    except MemoryQuotaExceeded:
        # Not a result for the model to read: the quota refuses the whole request (a chat's turns
        # included), a 409 with nothing written, as it refuses POST /v1/memories (docs/SECURITY.md).
        raise
    except EngramError as exc:
        return [ToolResult.refused("remember", exc) for _ in calls]
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
                token_budget=args.token_budget or scope.token_budget,
                types=types or None,
                include_sensitive=scope.include_sensitive,
                as_of=args.as_of,
                as_of_kind=AsOfKind(args.as_of_kind),
                agent_id=scope.agent_id,
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
            {"tool": "recall", "context": result.context, "memories": memories, "trace": _summary(result)},
            [m.memory.id for m in result.memories],
        )

    return await each("recall", calls, one)


def _summary(result: RecallResult) -> dict[str, object]:
    """How the context was chosen, in a few numbers (`POST /v1/recall` with `explain` has the rest)."""
    return {
        "candidates": result.candidates,
        "included": len(result.memories),
        "skipped": len(result.skipped),
        "tokens_used": result.tokens_used,
        "token_budget": result.token_budget,
        "plan": result.plan,
    }


async def _forget(env: ToolEnv, calls: list[ForgetArgs]) -> list[ToolResult]:
    async def one(args: ForgetArgs) -> ToolResult:
        forgotten = await _forget_one(env, args)
        described = args.description or args.subject
        return ToolResult(
            {"tool": "forget", "forgotten": [str(i) for i in forgotten], "description": described}
        )

    return await each("forget", calls, one)


async def _forget_one(env: ToolEnv, args: ForgetArgs) -> list[uuid.UUID]:
    """By id; else by slot; else forget-by-query: the memory recall ranks first for the description, if
    it is similar enough (app.memory.similarity, the same rule as `POST /v1/forget` with a query)."""
    memory, user, why = env.memory, env.scope.user_id, "forgotten by the agent"
    agent = env.scope.agent_id
    forgotten: list[uuid.UUID] = []
    if args.memory_id is not None:
        forgotten = await memory.forget(user, memory_id=args.memory_id, reason=why, agent_id=agent)
    if not forgotten and args.subject:
        forgotten = await _try_forget(env, subject=args.subject)
    if not forgotten and args.description:
        forgotten = await _try_forget(env, query=args.description)
    return forgotten


async def _try_forget(
    env: ToolEnv, *, subject: str | None = None, query: str | None = None
) -> list[uuid.UUID]:
    try:
        return await env.memory.forget(
            env.scope.user_id,
            project_id=env.scope.project_id if query is not None else None,  # a slot: every project's
            subject=subject,
            query=query,
            reason="forgotten by the agent",
            agent_id=env.scope.agent_id,
        )
    except EngramError:  # e.g. a subject too generic to be a slot: try the next way
        return []


# Tools for people and MCP clients: not offered to the chat model (phase: after a turn's recalls).
_OPERATIONS: list[tuple[str, str, type[Arguments], Handler]] = [
    (
        "history",
        "A memory's chain of versions (newest first) and what happened to each: created, "
        "superseded, forgotten, with who and why.",
        ops.HistoryArgs,
        ops.history,
    ),
    (
        "timeline",
        "What happened to the user's memories, newest first (one page; pass next_cursor on).",
        ops.TimelineArgs,
        ops.timeline,
    ),
    ("stats", "Counts of the user's memories by status and type.", ops.StatsArgs, ops.stats),
    (
        "export",
        "Export the user's memories, events and proposals as one JSON document (the import tool's input).",
        ops.ExportArgs,
        ops.export,
    ),
    (
        "import",
        "Import an export document: duplicates are merged, the newest memory of a slot stays "
        "current, and a bad document imports nothing.",
        ops.ImportArgs,
        ops.import_document,
    ),
    (
        "dream",
        "Propose consolidations of the user's memories (merge duplicates, forget stale ones). "
        "Nothing changes until a proposal is approved and applied.",
        ops.DreamArgs,
        ops.dream,
    ),
    (
        "list_proposals",
        "The user's dream proposals, newest first.",
        ops.ProposalsArgs,
        ops.proposals,
    ),
    ("approve_proposal", "Approve a proposed consolidation.", ops.DecideArgs, ops.approve),
    ("reject_proposal", "Reject a proposed consolidation.", ops.DecideArgs, ops.reject),
    (
        "apply",
        "Apply the user's approved proposals; a proposal whose memories changed since is "
        "reported stale and left alone.",
        ops.ApplyArgs,
        ops.apply,
    ),
]

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
        *(
            Tool(name, description, arguments, run, phase=3, for_model=False)
            for name, description, arguments, run in _OPERATIONS
        ),
    ]
)

# What the chat model is offered and may call: the executor refuses the rest.
MODEL_CATALOGUE = CATALOGUE.for_model()
