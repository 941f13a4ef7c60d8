"""SQL of the erase. Every statement names the tenant; RLS is the second wall."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, delete, func, literal, or_, select, update
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import DreamProposal, Memory, MemoryEvent, Message, UsageEvent
from app.store.scope import scope_clause
from app.store.sql import any_id
from app.tenancy.types import TenantId
from app.vocabulary import Scope

MIN_QUOTE_CHARS = 16


def _count(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


class EraseStore:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def memory_ids(self, scope: Scope) -> list[uuid.UUID]:
        """The scope's memories, locked so a concurrent change cannot slip past the erase."""
        query = select(Memory.id).where(scope_clause(scope)).with_for_update()
        return list((await self.session.scalars(query)).all())

    async def lock_memory(self, memory_id: uuid.UUID) -> Memory | None:
        query = (
            select(Memory).where(Memory.tenant_id == self.tenant, Memory.id == memory_id).with_for_update()
        )
        memory = (await self.session.scalars(query)).first()
        if memory is not None:
            self.session.expunge(memory)  # deleted below with a statement, not through the session
        return memory

    async def source_message_ids(self, memory_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
        query = select(Memory.source_message_id).where(
            Memory.tenant_id == self.tenant,
            Memory.id == any_id(memory_ids),
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
                .where(Memory.tenant_id == self.tenant, column == any_id(listed))
                .values({column: None})
                .execution_options(synchronize_session=False)
            )
        result = await self.session.execute(
            delete(Memory)
            .where(Memory.tenant_id == self.tenant, Memory.id == any_id(listed))
            .execution_options(synchronize_session=False)
        )
        return _count(result)

    async def delete_events(self, scope: Scope, ids: Sequence[uuid.UUID]) -> int:
        """The scope's events, and in a project also those of its erased memories."""
        user = Scope.of_user(scope.tenant, scope.user_id, None)
        condition: Any = scope_clause(user, table="memory_events")
        if scope.project_id is not None:
            condition = and_(
                condition,
                or_(MemoryEvent.project_id == scope.project_id, MemoryEvent.memory_id == any_id(ids)),
            )
        return _count(await self.session.execute(delete(MemoryEvent).where(condition)))

    async def forget_promoter(self, user_id: str) -> int:
        """A shared space's copies stay with the space, but their `promoted` events stop naming the erased
        user as the one the memory came from."""
        proposer = MemoryEvent.details["proposer_user"].astext
        result = await self.session.execute(
            update(MemoryEvent)
            .where(MemoryEvent.tenant_id == self.tenant, proposer == user_id)
            .values(details=MemoryEvent.details.op("-")("proposer_user"))
            .execution_options(synchronize_session=False)
        )
        return _count(result)

    async def delete_proposals(self, scope: Scope | None, ids: Sequence[uuid.UUID]) -> int:
        """Proposals of the scope, and any proposal naming an erased memory (its payload may quote it)."""
        names_one = DreamProposal.target_ids.op("&&")(literal(list(ids), ARRAY(UUID(as_uuid=True))))
        conditions: list[Any] = [names_one]
        if scope is not None:
            conditions.append(scope_clause(scope, table="dream_proposals"))
        result = await self.session.execute(
            delete(DreamProposal).where(DreamProposal.tenant_id == self.tenant, or_(*conditions))
        )
        return _count(result)

    async def delete_messages(self, scope: Scope, ids: Sequence[uuid.UUID] = ()) -> int:
        """Conversation turns of the scope, and the given ones (the source of an erased memory)."""
        conditions: list[Any] = [scope_clause(scope, table="messages")]
        if ids:
            conditions.append(Message.id == any_id(ids))
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
                .where(Memory.tenant_id == self.tenant, Memory.source_message_id == any_id(deleted))
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
        user = scope_clause(Scope.of_user(self.tenant, memory.user_id, None), table="messages")
        return await self._delete_turns([and_(user, or_(*conditions))])

    async def delete_usage(self, user_id: str) -> int:
        user = Scope.of_user(self.tenant, user_id, None)
        result = await self.session.execute(
            delete(UsageEvent).where(scope_clause(user, table="usage_events"))
        )
        return _count(result)
