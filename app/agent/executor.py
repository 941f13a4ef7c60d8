"""Runs the model's tool calls against the memory service, one turn at a time.

Arguments are untrusted: each call is validated on its own, so one bad call becomes an error result the
model can read, not a failed request. All `remember` calls of a turn are written as one batch (one
embedding call, whatever the number of facts).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from app.agent.providers.base import ToolCall
from app.agent.tools import ForgetArgs, RecallArgs, RememberArgs, ToolArgumentError, parse_arguments
from app.lib.errors import EngramError
from app.memory.corrections import supersede_mentioned
from app.memory.models import RecallInput, RememberInput
from app.memory.service import MemoryService
from app.vocabulary import MemoryType, Source


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What every tool call of one chat request shares."""

    user_id: str
    project_id: str | None
    session_id: str | None
    source_model: str
    source_message_id: uuid.UUID | None
    token_budget: int
    include_sensitive: bool = False


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    call: ToolCall
    result: dict[str, Any]
    memory_ids: list[uuid.UUID]  # memories this call put in front of the model (recall)


class ToolExecutor:
    def __init__(self, memory: MemoryService, context: ToolContext) -> None:
        self.memory = memory
        self.ctx = context

    async def run_turn(self, calls: list[ToolCall]) -> list[ToolOutcome]:
        """Forgets, then the batch of remembers, then recalls; results in the order the model asked."""
        parsed: dict[str, Any] = {}
        outcomes: dict[str, ToolOutcome] = {}
        for call in calls:
            try:
                parsed[call.id] = parse_arguments(call.name, call.arguments)
            except ToolArgumentError as exc:
                outcomes[call.id] = ToolOutcome(call, {"tool": call.name, "error": str(exc)}, [])
        for call in calls:
            if isinstance(parsed.get(call.id), ForgetArgs):
                outcomes[call.id] = await self._guarded(call, self._forget, parsed[call.id])
        remembers = [c for c in calls if isinstance(parsed.get(c.id), RememberArgs)]
        if remembers:
            outcomes.update(await self._remember(remembers, [parsed[c.id] for c in remembers]))
        for call in calls:
            if isinstance(parsed.get(call.id), RecallArgs):
                outcomes[call.id] = await self._guarded(call, self._recall, parsed[call.id])
        return [outcomes[c.id] for c in calls]

    async def _guarded(self, call: ToolCall, run: Any, args: Any) -> ToolOutcome:
        try:
            result, ids = await run(args)
        except EngramError as exc:
            return ToolOutcome(call, {"tool": call.name, "error": exc.detail}, [])
        return ToolOutcome(call, {"tool": call.name, **result}, ids)

    async def _remember(self, calls: list[ToolCall], args: list[RememberArgs]) -> dict[str, ToolOutcome]:
        items = [
            RememberInput(
                user_id=self.ctx.user_id,
                content=a.content,
                type=MemoryType.or_fact(a.type),
                subject=a.subject,
                project_id=a.project_id or self.ctx.project_id,
                session_id=self.ctx.session_id,
                importance=a.importance,
                source=Source.AGENT,
                source_model=self.ctx.source_model,
                source_message_id=self.ctx.source_message_id,
            )
            for a in args
        ]
        try:
            results = await self.memory.remember_many(items)
        except EngramError as exc:
            return {c.id: ToolOutcome(c, {"tool": "remember", "error": exc.detail}, []) for c in calls}
        for a, r in zip(args, results, strict=True):
            if a.replaces and r.action != "deduplicated" and not r.superseded:
                old = await supersede_mentioned(self.memory.deps, r.memory, a.replaces, self.memory.actor)
                if old is not None:
                    r.superseded.append(old.id)
        return {
            call.id: ToolOutcome(
                call,
                {
                    "tool": "remember",
                    "id": str(r.memory.id),
                    "action": r.action,
                    "content": r.memory.content,
                    "superseded": [str(i) for i in r.superseded],
                    "proposals": [str(i) for i in r.proposals],
                },
                [],
            )
            for call, r in zip(calls, results, strict=True)
        }

    async def _recall(self, args: RecallArgs) -> tuple[dict[str, Any], list[uuid.UUID]]:
        result = await self.memory.recall(
            RecallInput(
                user_id=self.ctx.user_id,
                query=args.query,
                project_id=args.project_id or self.ctx.project_id,
                token_budget=self.ctx.token_budget,
                types=[MemoryType(t) for t in args.types] if args.types else None,
                include_sensitive=self.ctx.include_sensitive,
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
        return {"context": result.context, "memories": memories}, [m.memory.id for m in result.memories]

    async def _forget(self, args: ForgetArgs) -> tuple[dict[str, Any], list[uuid.UUID]]:
        """By id; else by slot; else the closest memory; else recall the description, forget the top hit."""
        user = self.ctx.user_id
        forgotten: list[uuid.UUID] = []
        if args.memory_id is not None:
            forgotten = await self.memory.forget(
                user, memory_id=args.memory_id, reason="forgotten by the agent"
            )
        if not forgotten and args.subject:
            forgotten = await self._try_forget(subject=args.subject)
        if not forgotten and args.description:
            forgotten = await self._try_forget(query=args.description)
        if not forgotten and args.description:
            recalled = await self.memory.recall(
                RecallInput(
                    user_id=user, query=args.description, project_id=self.ctx.project_id, token_budget=512
                )
            )
            # Only a memory that shares a word with the description: never the nearest unrelated one.
            hits = [m for m in recalled.memories if m.components.get("keyword", 0.0) > 0]
            if hits:
                top = hits[0].memory.id
                forgotten = await self.memory.forget(user, memory_id=top, reason="forgotten by the agent")
        return {"forgotten": [str(i) for i in forgotten], "description": args.description or args.subject}, []

    async def _try_forget(self, *, subject: str | None = None, query: str | None = None) -> list[uuid.UUID]:
        try:
            return await self.memory.forget(
                self.ctx.user_id, subject=subject, query=query, reason="forgotten by the agent"
            )
        except EngramError:  # e.g. a subject too generic to be a slot: try the next way
            return []
