"""Usage over time: the tenant's model calls summed per time bucket, model and kind (`date_bin`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import UsageEvent
from app.tenancy.types import TenantId


@dataclass(frozen=True, slots=True)
class UsageBucket:
    """The calls of one model and kind in one time bucket."""

    start: datetime
    model: str
    kind: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class UsageSeries:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def buckets(
        self, *, since: datetime, until: datetime, step: timedelta, user_id: str | None
    ) -> list[UsageBucket]:
        """Tokens per bucket of `step` from `since` (buckets start at `since + k * step`), model and kind.

        Only buckets with calls come back; a chart fills the gaps with zeros. Reads `ix_usage_events_time`.
        """
        bucket = func.date_bin(step, UsageEvent.created_at, since).label("start")
        conditions: list[Any] = [
            UsageEvent.tenant_id == self.tenant,
            UsageEvent.created_at >= since,
            UsageEvent.created_at < until,
        ]
        if user_id is not None:
            conditions.append(UsageEvent.user_id == user_id)
        query = (
            select(
                bucket,
                UsageEvent.model,
                UsageEvent.kind,
                func.count().label("calls"),
                func.sum(UsageEvent.prompt_tokens).label("prompt_tokens"),
                func.sum(UsageEvent.completion_tokens).label("completion_tokens"),
                func.sum(UsageEvent.total_tokens).label("total_tokens"),
            )
            .where(*conditions)
            .group_by(bucket, UsageEvent.model, UsageEvent.kind)
            .order_by(bucket, UsageEvent.model, UsageEvent.kind)
        )
        return [UsageBucket(**r._asdict()) for r in (await self.session.execute(query)).all()]
