"""SQL over the audit trail (`memory_events`) for the timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import MemoryEvent
from app.tenancy.types import TenantId


class EventRepository:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def page(
        self,
        user_id: str,
        *,
        project_id: str | None,
        after: tuple[datetime, int] | None,
        limit: int,
    ) -> list[MemoryEvent]:
        """A user's events, newest first (keyset on created_at, id); `limit + 1` rows: is there more?"""
        conditions: list[Any] = [MemoryEvent.tenant_id == self.tenant, MemoryEvent.user_id == user_id]
        if project_id is not None:
            conditions.append(MemoryEvent.project_id == project_id)
        if after is not None:
            created, event_id = after
            conditions.append(
                or_(
                    MemoryEvent.created_at < created,
                    and_(MemoryEvent.created_at == created, MemoryEvent.id < event_id),
                )
            )
        query = (
            select(MemoryEvent)
            .where(*conditions)
            .order_by(MemoryEvent.created_at.desc(), MemoryEvent.id.desc())
            .limit(limit + 1)
        )
        return list((await self.session.scalars(query)).all())
