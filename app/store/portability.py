"""SQL of export, import and re-embed. Every statement names the tenant; RLS is the second wall."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, any_, func, literal, or_, select
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import undefer

from app.db.models import DreamProposal, Memory, MemoryEvent, MemoryPassage
from app.store.scope import scope_clause
from app.tenancy.types import TenantId
from app.vocabulary import LIVE_STATUSES, Scope


@dataclass(frozen=True, slots=True)
class ExistingMemory:
    id: uuid.UUID
    user_id: str
    project_id: str | None
    type: str
    status: str
    content_hash: str


class PortabilityStore:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    def _scope(self, model: Any, user_id: str | None, project_id: str | None) -> list[Any]:
        """The whole tenant, or one user's rows (of one project when given)."""
        if user_id is None:
            return [model.tenant_id == self.tenant]
        scope = Scope.of_user(self.tenant, user_id, project_id)
        return [scope_clause(scope, table=model.__tablename__)]

    # -- export ------------------------------------------------------------------------------------
    async def memories(self, user_id: str | None, project_id: str | None) -> list[Memory]:
        """Every memory of the scope, whatever its status, with its vector."""
        query = (
            select(Memory)
            .options(undefer(Memory.embedding))
            .where(*self._scope(Memory, user_id, project_id))
            .order_by(Memory.created_at, Memory.id)
        )
        return list((await self.session.scalars(query)).all())

    async def events(self, user_id: str | None, project_id: str | None) -> list[MemoryEvent]:
        query = (
            select(MemoryEvent)
            .where(*self._scope(MemoryEvent, user_id, project_id))
            .order_by(MemoryEvent.created_at, MemoryEvent.id)
        )
        return list((await self.session.scalars(query)).all())

    async def proposals(self, user_id: str | None, project_id: str | None) -> list[DreamProposal]:
        query = (
            select(DreamProposal)
            .where(*self._scope(DreamProposal, user_id, project_id))
            .order_by(DreamProposal.created_at, DreamProposal.id)
        )
        return list((await self.session.scalars(query)).all())

    # -- import ------------------------------------------------------------------------------------
    async def existing(self, ids: Sequence[uuid.UUID], digests: Sequence[str]) -> list[ExistingMemory]:
        """Rows that share an id with the document, and live rows that share a content hash."""
        if not ids and not digests:
            return []
        columns = (
            Memory.id,
            Memory.user_id,
            Memory.project_id,
            Memory.type,
            Memory.status,
            Memory.content_hash,
        )
        query = select(*columns).where(
            Memory.tenant_id == self.tenant,
            or_(
                Memory.id == any_(literal(list(ids), ARRAY(UUID(as_uuid=True)))),
                (Memory.content_hash == any_(literal(list(digests), ARRAY(String))))
                & Memory.status.in_(LIVE_STATUSES),
            ),
        )
        return [ExistingMemory(*row) for row in (await self.session.execute(query)).all()]

    async def existing_proposal_ids(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
        if not ids:
            return {}
        query = select(DreamProposal.id, DreamProposal.user_id).where(
            DreamProposal.tenant_id == self.tenant,
            DreamProposal.id == any_(literal(list(ids), ARRAY(UUID(as_uuid=True)))),
        )
        return {row.id: row.user_id for row in (await self.session.execute(query)).all()}

    async def existing_event_keys(
        self, keys: Sequence[tuple[uuid.UUID | None, str, datetime]]
    ) -> set[tuple[uuid.UUID | None, str, datetime]]:
        """Which (memory, kind, time) events are already stored (re-importing an export adds none)."""
        memory_ids = list({k[0] for k in keys if k[0] is not None})
        if not memory_ids:
            return set()
        query = select(MemoryEvent.memory_id, MemoryEvent.kind, MemoryEvent.created_at).where(
            MemoryEvent.tenant_id == self.tenant,
            MemoryEvent.memory_id == any_(literal(memory_ids, ARRAY(UUID(as_uuid=True)))),
        )
        stored = {(r.memory_id, r.kind, r.created_at) for r in (await self.session.execute(query)).all()}
        return stored & set(keys)

    async def live_slotted(self, user_ids: Sequence[str]) -> list[Memory]:
        """The live memories with a slot (subject) of these users, locked until the transaction ends."""
        if not user_ids:
            return []
        query = (
            select(Memory)
            .where(
                Memory.tenant_id == self.tenant,
                Memory.user_id.in_(list(user_ids)),
                Memory.subject.is_not(None),
                Memory.status.in_(LIVE_STATUSES),
            )
            .with_for_update()
        )
        return list((await self.session.scalars(query)).all())

    # -- re-embed ----------------------------------------------------------------------------------
    def _mismatched(self, embed_model: str, user_id: str | None, passage_tokens: int) -> list[Any]:
        return [
            *self._scope(Memory, user_id, None),
            or_(
                Memory.embed_model.is_distinct_from(embed_model),
                Memory.embedding.is_(None),
                _passages_stale(embed_model, passage_tokens),
            ),
        ]

    async def count_mismatched(self, embed_model: str, user_id: str | None, passage_tokens: int) -> int:
        """Rows of any status whose vector, or whose passages, are not what the configured model and
        passage size make."""
        query = select(func.count()).where(*self._mismatched(embed_model, user_id, passage_tokens))
        return int(await self.session.scalar(query) or 0)

    async def mismatched_batch(
        self, embed_model: str, user_id: str | None, limit: int, passage_tokens: int
    ) -> list[Memory]:
        """The next rows to re-embed; rows another re-embed run holds are skipped, not waited for."""
        query = (
            select(Memory)
            .options(undefer(Memory.embedding))
            .where(*self._mismatched(embed_model, user_id, passage_tokens))
            .order_by(Memory.created_at, Memory.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return list((await self.session.scalars(query)).all())


def _passages_stale(embed_model: str, passage_tokens: int) -> Any:
    """A memory's passages are not those the model and size make: one is another model's or longer than
    a passage may be (the size was lowered), or a long memory has none (written before migration 0012,
    or before the size was lowered). A row without a token count (before 0007) is long by its length."""
    passages = select(MemoryPassage.memory_id).where(
        MemoryPassage.tenant_id == Memory.tenant_id, MemoryPassage.memory_id == Memory.id
    )
    wrong = passages.where(
        or_(MemoryPassage.embed_model.is_distinct_from(embed_model), MemoryPassage.tokens > passage_tokens)
    )
    long = func.coalesce(Memory.content_tokens, func.char_length(Memory.content)) > passage_tokens
    if passage_tokens <= 0:
        return passages.exists()  # passages are off: every memory that has some is re-made without
    return or_(wrong.exists(), and_(long, ~passages.exists()))
