"""Usage events: written once per model call, aggregated for `GET /v1/usage`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import UsageEvent
from app.tenancy.types import TenantId
from app.usage.meter import UsageMeter


class UsageRepository:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    def add_all(
        self, meter: UsageMeter, *, user_id: str | None, session_id: str | None, request_id: str | None
    ) -> None:
        for r in meter.records:
            self.session.add(
                UsageEvent(
                    tenant_id=self.tenant,
                    user_id=user_id,
                    session_id=session_id,
                    request_id=request_id,
                    kind=r.kind,
                    model=r.model,
                    prompt_tokens=r.prompt_tokens,
                    completion_tokens=r.completion_tokens,
                    total_tokens=r.total_tokens,
                    latency_ms=r.latency_ms,
                )
            )

    async def aggregate(
        self, *, since: datetime | None, until: datetime | None, user_id: str | None
    ) -> dict[str, Any]:
        conditions: list[Any] = [UsageEvent.tenant_id == self.tenant]
        if since is not None:
            conditions.append(UsageEvent.created_at >= since)
        if until is not None:
            conditions.append(UsageEvent.created_at < until)
        if user_id is not None:
            conditions.append(UsageEvent.user_id == user_id)
        sums = (
            func.count().label("calls"),
            func.coalesce(func.sum(UsageEvent.prompt_tokens), 0).label("prompt_tokens"),
            func.coalesce(func.sum(UsageEvent.completion_tokens), 0).label("completion_tokens"),
            func.coalesce(func.sum(UsageEvent.total_tokens), 0).label("total_tokens"),
        )

        def row_dict(row: Any) -> dict[str, int]:
            return {
                k: int(getattr(row, k))
                for k in ("calls", "prompt_tokens", "completion_tokens", "total_tokens")
            }

        total = (await self.session.execute(select(*sums).where(*conditions))).one()
        by_model = (
            await self.session.execute(
                select(UsageEvent.model, *sums).where(*conditions).group_by(UsageEvent.model)
            )
        ).all()
        by_kind = (
            await self.session.execute(
                select(UsageEvent.kind, *sums).where(*conditions).group_by(UsageEvent.kind)
            )
        ).all()
        return {
            "total": row_dict(total),
            "by_model": {r.model: row_dict(r) for r in by_model},
            "by_kind": {r.kind: row_dict(r) for r in by_kind},
        }
