"""Conversation turns, stored redacted: provenance for memories and short-term context for chat."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Message
from app.lib.redaction import redact
from app.store.scope import scope_clause
from app.tenancy.types import TenantId
from app.vocabulary import Scope


class MessageRepository:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    def add(
        self,
        *,
        user_id: str,
        role: str,
        content: str,
        project_id: str | None,
        session_id: str | None,
        model: str | None = None,
    ) -> Message:
        """Store one turn; the content is redacted here whatever the caller did."""
        message = Message(
            tenant_id=self.tenant,
            id=uuid.uuid4(),
            user_id=user_id,
            project_id=project_id,
            session_id=session_id,
            role=role,
            content=redact(content).text,
            model=model,
        )
        self.session.add(message)
        return message

    async def recent(self, user_id: str, session_id: str, limit: int) -> list[Message]:
        """The last `limit` turns of a session, oldest first."""
        query = (
            select(Message)
            .where(
                scope_clause(Scope.of_user(self.tenant, user_id, None), table="messages"),
                Message.session_id == session_id,
                Message.role.in_(("user", "assistant")),
            )
            .order_by(Message.created_at.desc(), Message.id.desc())
            .limit(limit)
        )
        return list(reversed((await self.session.scalars(query)).all()))
