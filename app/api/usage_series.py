"""/v1/usage/series: tokens per model and kind over time, for a chart. HTTP <-> UsageSeries only."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from litestar.params import QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.guards import require_bearer
from app.api.memories import MaybeIdent
from app.store.usage_series import UsageSeries
from app.tenancy.auth import Principal
from app.usage.series import Bucket, series_step

When = Annotated[datetime, QueryParameter()]


class UsageBucketOut(msgspec.Struct, kw_only=True):
    start: datetime
    model: str
    kind: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class UsageSeriesOut(msgspec.Struct, kw_only=True):
    bucket: str
    since: datetime
    until: datetime
    items: list[UsageBucketOut]  # buckets with calls only, oldest first


async def provide_usage_series(
    principal: NamedDependency[Principal], transaction: NamedDependency[AsyncSession]
) -> UsageSeries:
    return UsageSeries(transaction, principal.tenant)


class UsageSeriesController(Controller):
    path = "/v1/usage"
    guards = [require_bearer]
    tags = ["agent"]
    dependencies = {"usage_series": Provide(provide_usage_series)}

    @get("/series", description="Tokens per model and kind in buckets from since (buckets with calls).")
    async def series(
        self,
        usage_series: NamedDependency[UsageSeries],
        since: When,
        until: When,
        bucket: Annotated[Bucket, QueryParameter()] = "hour",
        user_id: MaybeIdent = None,
    ) -> UsageSeriesOut:
        step = series_step(since, until, bucket)
        rows = await usage_series.buckets(since=since, until=until, step=step, user_id=user_id)
        return UsageSeriesOut(
            bucket=bucket, since=since, until=until, items=[UsageBucketOut(**asdict(r)) for r in rows]
        )
