"""The lifecycle sweep's SQL (one tenant per transaction; the caller has set the tenant context), and
what it reads of a memory."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory
from app.store.sql import PROTECTED_SQL
from app.tenancy.types import TenantId
from app.vocabulary import LIVE_STATUSES, MemoryStatus, MemoryType


class SweepAction(StrEnum):
    EXPIRE = "expire"
    ARCHIVE = "archive"


@dataclass(frozen=True, slots=True)
class SweepPolicy:
    archive_after_days: float  # 0 disables archival
    archive_importance_below: float


@dataclass(frozen=True, slots=True)
class SweepCandidate:
    """What the sweep knows about one memory (no content: the sweep never needs it)."""

    id: uuid.UUID
    user_id: str
    project_id: str | None
    status: MemoryStatus
    type: MemoryType
    importance: float
    expires_at: datetime | None
    last_used: datetime  # last_accessed_at, else created_at


class MaintenanceStore:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def try_lock(self) -> bool:
        """One sweep per tenant at a time (replicas and the CLI may overlap); held until commit."""
        key = f"engram-sweep:{self.tenant}"
        sql = text("SELECT pg_try_advisory_xact_lock(hashtextextended(:k, 0))")
        return bool((await self.session.execute(sql, {"k": key})).scalar_one())

    async def candidates(
        self, action: SweepAction, now: datetime, policy: SweepPolicy, *, after: uuid.UUID | None, limit: int
    ) -> list[SweepCandidate]:
        """Live memories past their expiry (EXPIRE) or possibly cold (ARCHIVE), in id order, locked.

        The pure `sweep_decision` has the last word; this only narrows the rows it looks at. The two
        passes are separate queries so the expiry pass can use its partial index.
        """
        last_used = func.coalesce(Memory.last_accessed_at, Memory.created_at)
        conditions: list[Any] = [Memory.tenant_id == self.tenant, Memory.status.in_(LIVE_STATUSES)]
        if action is SweepAction.EXPIRE:
            conditions += [Memory.expires_at.is_not(None), Memory.expires_at <= now]
        elif policy.archive_after_days > 0:
            conditions += [
                text(f"NOT {PROTECTED_SQL}"),
                last_used <= now - timedelta(days=policy.archive_after_days),
                Memory.importance < policy.archive_importance_below,
            ]
        else:
            return []
        if after is not None:
            conditions.append(Memory.id > after)
        query = (
            select(
                Memory.id,
                Memory.user_id,
                Memory.project_id,
                Memory.status,
                Memory.type,
                Memory.importance,
                Memory.expires_at,
                last_used.label("last_used"),
            )
            .where(*conditions)
            .order_by(Memory.id)
            .limit(limit)
            .with_for_update(of=Memory, skip_locked=True)
        )
        rows = (await self.session.execute(query)).all()
        return [SweepCandidate(*row) for row in rows]

    async def set_status(self, ids: Sequence[uuid.UUID], status: MemoryStatus, now: datetime) -> int:
        if not ids:
            return 0
        result = await self.session.execute(
            update(Memory)
            .where(
                Memory.tenant_id == self.tenant, Memory.id.in_(list(ids)), Memory.status.in_(LIVE_STATUSES)
            )
            .values(status=status, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)
