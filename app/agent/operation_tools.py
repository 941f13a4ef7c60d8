"""The catalogue's tools beyond remember / recall / forget: history, timeline, stats, export, import and
dreaming (propose, list, approve, reject, apply). Each goes through its domain's service, as the REST
route does, and answers with the route's field names (memories as `MemoryView`, events and proposals
with the API's fields), plain JSON values.

The user is the scope's (the chat's user, or the MCP session's): a tool never reads or decides about
another user's memory or proposal, even one of the same tenant.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

import msgspec

from app.agent.tooling import Arguments, Short, ToolEnv, ToolResult, each
from app.db.models import DreamProposal, Memory, MemoryEvent
from app.dream.service import DreamService
from app.lib.errors import NotFound
from app.memory.timeline import Timeline
from app.portability.service import PortabilityService
from app.store.records import MemoryView
from app.vocabulary import ProposalStatus

Limit = Annotated[int, msgspec.Meta(ge=1, le=200)]
Cursor = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
EVENT_FIELDS = (
    "id",
    "memory_id",
    "user_id",
    "project_id",
    "kind",
    "actor",
    "reason",
    "details",
    "created_at",
)
PROPOSAL_FIELDS = (
    *("id", "user_id", "project_id", "kind", "target_ids", "payload", "rationale", "status", "model"),
    *("created_at", "decided_at", "applied_at"),
)


class HistoryArgs(Arguments):
    memory_id: uuid.UUID


class TimelineArgs(Arguments):
    project_id: Short | None = None
    limit: Limit = 50
    cursor: Cursor | None = None


class StatsArgs(Arguments):
    pass


class ExportArgs(Arguments):
    project_id: Short | None = None


class ImportArgs(Arguments):
    document: Annotated[
        dict[str, Any], msgspec.Meta(description="An export document, as the export tool returns it.")
    ]


class DreamArgs(Arguments):
    project_id: Short | None = None


class ProposalsArgs(Arguments):
    status: ProposalStatus | None = None
    project_id: Short | None = None
    limit: Limit = 50
    cursor: Cursor | None = None


class DecideArgs(Arguments):
    proposal_id: uuid.UUID


class ApplyArgs(Arguments):
    proposal_ids: (
        Annotated[
            list[uuid.UUID],
            msgspec.Meta(
                max_length=500, description="Only these; all of the user's approved ones if left out."
            ),
        ]
        | None
    ) = None


def _plain(value: Any) -> Any:
    """JSON values only (ids and times as strings), as the REST response carries them."""
    return msgspec.to_builtins(value)


def memory_view(m: Memory) -> dict[str, Any]:
    view = MemoryView(**{f: getattr(m, f) for f in MemoryView.__struct_fields__})
    return dict(_plain(view))


def _event(e: MemoryEvent) -> dict[str, Any]:
    return dict(_plain({f: getattr(e, f) for f in EVENT_FIELDS}))


def _proposal(p: DreamProposal) -> dict[str, Any]:
    return dict(_plain({f: getattr(p, f) for f in PROPOSAL_FIELDS}))


def _own(env: ToolEnv, user_id: str, what: str, the_id: uuid.UUID) -> None:
    """Another user's row reads as absent: the same answer as an id that does not exist."""
    if user_id != env.scope.user_id:
        raise NotFound(f"{what} {the_id} not found")


async def _own_proposal(env: ToolEnv, proposal_id: uuid.UUID) -> None:
    found = await env.ctx.store.proposals.get(proposal_id)
    if found is None:
        raise NotFound(f"proposal {proposal_id} not found")
    _own(env, found.user_id, "proposal", proposal_id)


async def history(env: ToolEnv, calls: list[HistoryArgs]) -> list[ToolResult]:
    async def one(args: HistoryArgs) -> ToolResult:
        memory = await env.memory.get(args.memory_id)
        _own(env, memory.user_id, "memory", args.memory_id)
        found = await env.memory.history(args.memory_id)
        events = [_event(e) for e in found.events if isinstance(e, MemoryEvent)]
        versions = [memory_view(m) for m in found.versions]
        return ToolResult({"tool": "history", "versions": versions, "events": events})

    return await each("history", calls, one)


async def timeline(env: ToolEnv, calls: list[TimelineArgs]) -> list[ToolResult]:
    async def one(args: TimelineArgs) -> ToolResult:
        page = await Timeline(env.ctx).page(
            env.scope.user_id, project_id=args.project_id, limit=args.limit, cursor=args.cursor
        )
        items = [_event(e) for e in page.items]
        return ToolResult({"tool": "timeline", "items": items, "next_cursor": page.next_cursor})

    return await each("timeline", calls, one)


async def stats(env: ToolEnv, calls: list[StatsArgs]) -> list[ToolResult]:
    async def one(_: StatsArgs) -> ToolResult:
        return ToolResult({"tool": "stats", **_plain(await env.memory.stats(env.scope.user_id))})

    return await each("stats", calls, one)


async def export(env: ToolEnv, calls: list[ExportArgs]) -> list[ToolResult]:
    async def one(args: ExportArgs) -> ToolResult:
        document = await PortabilityService(env.ctx).export(env.scope.user_id, args.project_id)
        return ToolResult({"tool": "export", "document": _plain(document)})

    return await each("export", calls, one)


async def import_document(env: ToolEnv, calls: list[ImportArgs]) -> list[ToolResult]:
    async def one(args: ImportArgs) -> ToolResult:
        # The same strict parse as `POST /v1/import` (unknown fields, depth, sizes), from the same bytes.
        result = await PortabilityService(env.ctx).import_raw(msgspec.json.encode(args.document))
        return ToolResult({"tool": "import", **_plain(result)})

    return await each("import", calls, one)


def _dreams(env: ToolEnv) -> DreamService:
    return DreamService(env.ctx, env.chat)


async def dream(env: ToolEnv, calls: list[DreamArgs]) -> list[ToolResult]:
    async def one(args: DreamArgs) -> ToolResult:
        result = await _dreams(env).dream(env.scope.user_id, args.project_id)
        return ToolResult(
            {
                "tool": "dream",
                "proposals": [_proposal(p) for p in result.proposals],
                "mode": result.mode,
                "created": result.created,
                "dropped": result.dropped,
            }
        )

    return await each("dream", calls, one)


async def proposals(env: ToolEnv, calls: list[ProposalsArgs]) -> list[ToolResult]:
    async def one(args: ProposalsArgs) -> ToolResult:
        page = await _dreams(env).list_proposals(
            env.scope.user_id,
            status=args.status,
            project_id=args.project_id,
            limit=args.limit,
            cursor=args.cursor,
        )
        items = [_proposal(p) for p in page.items]
        return ToolResult({"tool": "list_proposals", "items": items, "next_cursor": page.next_cursor})

    return await each("list_proposals", calls, one)


def _decide(name: str, verdict: Literal["approve", "reject"]) -> Any:
    async def run(env: ToolEnv, calls: list[DecideArgs]) -> list[ToolResult]:
        async def one(args: DecideArgs) -> ToolResult:
            await _own_proposal(env, args.proposal_id)
            decided = await _dreams(env).decide(args.proposal_id, approve=verdict == "approve")
            return ToolResult({"tool": name, "proposal": _proposal(decided)})

        return await each(name, calls, one)

    return run


approve = _decide("approve_proposal", "approve")
reject = _decide("reject_proposal", "reject")


async def apply(env: ToolEnv, calls: list[ApplyArgs]) -> list[ToolResult]:
    async def one(args: ApplyArgs) -> ToolResult:
        if args.proposal_ids is None:
            report = await _dreams(env).apply(user_id=env.scope.user_id)
        else:  # the service applies ids tenant-wide: each must be the session user's
            for proposal_id in args.proposal_ids:
                await _own_proposal(env, proposal_id)
            report = await _dreams(env).apply(proposal_ids=args.proposal_ids)
        return ToolResult({"tool": "apply", **_plain(report)})

    return await each("apply", calls, one)
