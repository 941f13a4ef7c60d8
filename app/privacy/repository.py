"""SQL of the erase. Every statement names the tenant; RLS is the second wall."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import any_, delete, func, literal, or_, select, update
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import DreamProposal, Memory, MemoryEvent, Message, UsageEvent
from app.tenancy.types import TenantId

MIN_QUOTE_CHARS = 16


def _any(ids: Sequence[uuid.UUID]) -> Any:
    """`= ANY($1::uuid[])`: one parameter however many ids (asyncpg allows 32,767 per statement)."""
    return any_(literal(list(ids), ARRAY(UUID(as_uuid=True))))


def _count(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


class EraseRepository:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def memory_ids(self, user_id: str, project_id: str | None) -> list[uuid.UUID]:
        """The scope's memories, locked so a concurrent change cannot slip past the erase."""
        conditions = [Memory.tenant_id == self.tenant, Memory.user_id == user_id]
        if project_id is not None:
            conditions.append(Memory.project_id == project_id)
        query = select(Memory.id).where(*conditions).with_for_update()
        return list((await self.session.scalars(query)).all())

    async def lock_memory(self, memory_id: uuid.UUID) -> Memory | None:
        query = (
            select(Memory).where(Memory.tenant_id == self.tenant, Memory.id == memory_id).with_for_update()
        )
        memory = (await self.session.scalars(query)).first()
        if memory is not None:
            self.session.expunge(memory)  # deleted below with a statement, not through the session
        return memory

    def add(self, row: object) -> None:
        self.session.add(row)

    async def flush(self) -> None:
        await self.session.flush()

    async def source_message_ids(self, memory_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
        query = select(Memory.source_message_id).where(
            Memory.tenant_id == self.tenant,
            Memory.id == _any(memory_ids),
            Memory.source_message_id.is_not(None),
        )
        return [m for m in (await self.session.scalars(query)).all() if m is not None]

    async def delete_memories(self, ids: Sequence[uuid.UUID]) -> int:
        """Delete rows (content and vectors go with them); links from other memories are cut first."""
        if not ids:
            return 0
        listed = list(ids)
        for column in (Memory.supersedes, Memory.superseded_by):
            await self.session.execute(
                update(Memory)
                .where(Memory.tenant_id == self.tenant, column == _any(listed))
                .values({column: None})
                .execution_options(synchronize_session=False)
            )
        result = await self.session.execute(
            delete(Memory)
            .where(Memory.tenant_id == self.tenant, Memory.id == _any(listed))
            .execution_options(synchronize_session=False)
        )
        return _count(result)

    async def delete_events(self, user_id: str, project_id: str | None, ids: Sequence[uuid.UUID]) -> int:
        scope: Any = MemoryEvent.user_id == user_id
        if project_id is not None:
            scope = scope & or_(MemoryEvent.project_id == project_id, MemoryEvent.memory_id == _any(ids))
        result = await self.session.execute(
            delete(MemoryEvent).where(MemoryEvent.tenant_id == self.tenant, scope)
        )
        return _count(result)

    async def scrub_events(self, memory_id: uuid.UUID) -> int:
        """Keep the trail of one erased memory (kind, actor, time) but not what it said."""
        result = await self.session.execute(
            update(MemoryEvent)
            .where(MemoryEvent.tenant_id == self.tenant, MemoryEvent.memory_id == memory_id)
            .values(details={}, reason=None)
        )
        return _count(result)

    async def delete_proposals(
        self, user_id: str | None, project_id: str | None, ids: Sequence[uuid.UUID]
    ) -> int:
        """Proposals of the scope, and any proposal naming an erased memory (its payload may quote it)."""
        names_one = DreamProposal.target_ids.op("&&")(literal(list(ids), ARRAY(UUID(as_uuid=True))))
        conditions: list[Any] = [names_one]
        if user_id is not None:
            in_scope: Any = DreamProposal.user_id == user_id
            if project_id is not None:
                in_scope = in_scope & (DreamProposal.project_id == project_id)
            conditions.append(in_scope)
        result = await self.session.execute(
            delete(DreamProposal).where(DreamProposal.tenant_id == self.tenant, or_(*conditions))
        )
        return _count(result)

    async def delete_messages(
        self, user_id: str | None, project_id: str | None, ids: Sequence[uuid.UUID] = ()
    ) -> int:
        """Conversation turns of the scope, or the given ones (the source of an erased memory)."""
        conditions: list[Any] = []
        if user_id is not None:
            in_scope: Any = Message.user_id == user_id
            if project_id is not None:
                in_scope = in_scope & (Message.project_id == project_id)
            conditions.append(in_scope)
        if ids:
            conditions.append(Message.id == _any(ids))
        return await self._delete_turns(conditions)

    async def _delete_turns(self, conditions: list[Any]) -> int:
        """Delete matching turns; memories drawn from them keep no pointer to nothing."""
        if not conditions:
            return 0
        deleted = (
            await self.session.scalars(
                delete(Message)
                .where(Message.tenant_id == self.tenant, or_(*conditions))
                .returning(Message.id)
            )
        ).all()
        if deleted:
            await self.session.execute(
                update(Memory)
                .where(Memory.tenant_id == self.tenant, Memory.source_message_id == _any(deleted))
                .values(source_message_id=None)
                .execution_options(synchronize_session=False)
            )
        return len(deleted)

    async def delete_turns_quoting(self, memory: Memory) -> int:
        """The exchange a memory was drawn from (its source turn and every turn stored by the same
        request: same session, same transaction time) and any later turn of the user quoting it."""
        conditions: list[Any] = []
        if memory.source_message_id is not None:
            source = (
                await self.session.execute(
                    select(Message.session_id, Message.created_at).where(
                        Message.tenant_id == self.tenant, Message.id == memory.source_message_id
                    )
                )
            ).first()
            conditions.append(Message.id == memory.source_message_id)
            if source is not None:
                conditions.append(
                    Message.session_id.is_not_distinct_from(source.session_id)
                    & (Message.created_at == source.created_at)
                )
        quote = " ".join(memory.content.split()).lower()
        if len(quote) >= MIN_QUOTE_CHARS:  # a short memory ("yes") would match unrelated turns
            conditions.append(func.strpos(func.lower(Message.content), quote) > 0)
        if not conditions:
            return 0
        return await self._delete_turns([(Message.user_id == memory.user_id) & or_(*conditions)])

    async def delete_usage(self, user_id: str) -> int:
        result = await self.session.execute(
            delete(UsageEvent).where(UsageEvent.tenant_id == self.tenant, UsageEvent.user_id == user_id)
        )
        return _count(result)
