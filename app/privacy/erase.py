"""Erase: the hard delete, as opposed to forget (soft: status `forgotten`, audit trail kept).

Erasing a user (or one project of a user) removes, in the caller's one transaction, the scope's
memories (content and vectors), the conversation turns, the events, the dream proposals and, for a
whole user, the usage rows; nothing of the scope is left to audit, so the receipt (counts of what was
removed) is the record. Erasing one memory removes the row, the turn it was drawn from and the
proposals naming it, and keeps its events without their details or reasons (the user still exists
and their timeline shows that something was erased, not what).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from typing import Any

from app.context import RequestContext
from app.lib.errors import NotFound, ValidationFailed
from app.lib.logging import get_logger
from app.store.erase import EraseStore
from app.store.events import NewEvent
from app.store.webhooks import WebhookStore
from app.vocabulary import EventKind, Scope

log = get_logger("engram.erase")


@dataclass(frozen=True, slots=True)
class EraseReceipt:
    user_id: str
    project_id: str | None
    memories: int
    messages: int
    events: int
    proposals: int
    usage_events: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Eraser:
    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.repo = EraseStore(ctx.session, ctx.tenant)

    async def erase_user(self, user_id: str, project_id: str | None = None) -> EraseReceipt:
        """Everything of a user, or of one of the user's projects (its global memories stay)."""
        if not user_id.strip():
            raise ValidationFailed("user_id must not be empty")
        scope = Scope.of_user(self.ctx.tenant, user_id, project_id)
        ids = await self.repo.memory_ids(scope)
        sources = await self.repo.source_message_ids(ids)
        proposals = await self.repo.delete_proposals(scope, ids)
        events = await self.repo.delete_events(scope, ids)
        messages = await self.repo.delete_messages(scope, sources)
        memories = await self.repo.delete_memories(ids)
        usage = await self.repo.delete_usage(user_id) if project_id is None else 0
        if project_id is None:
            await self.repo.forget_promoter(user_id)
        receipt = EraseReceipt(user_id, project_id, memories, messages, events, proposals, usage)
        # The scope keeps no audit trail, but webhooks still hear of the erase (ids only, no content).
        await WebhookStore(self.ctx.session, self.ctx.tenant).enqueue(
            EventKind.ERASED,
            {
                "user_id": user_id,
                "project_id": project_id,
                "kind": EventKind.ERASED,
                "actor": self.ctx.actor,
                "at": self.ctx.clock.now().isoformat(),
                "details": {"scope": "project" if project_id is not None else "user", "memories": memories},
            },
        )
        log.info(
            "erased",
            scope="project" if project_id is not None else "user",
            **{k: v for k, v in receipt.as_dict().items() if isinstance(v, int)},
        )
        return receipt

    async def erase_memory(self, memory_id: uuid.UUID) -> EraseReceipt:
        """One memory: its row, the turns it came from or that quote it, the proposals naming it; its
        events lose their details and reasons."""
        memory = await self.repo.lock_memory(memory_id)
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        user_id, project_id = memory.user_id, memory.project_id
        proposals = await self.repo.delete_proposals(None, [memory_id])
        events = await self.ctx.store.events.scrub(memory_id)
        messages = await self.repo.delete_turns_quoting(memory)
        memories = await self.repo.delete_memories([memory_id])
        await self.ctx.store.events.record(NewEvent.about(memory, EventKind.ERASED, "erase requested"))
        log.info("erased", scope="memory", memories=memories, events=events, proposals=proposals)
        return EraseReceipt(user_id, project_id, memories, messages, events, proposals, 0)
