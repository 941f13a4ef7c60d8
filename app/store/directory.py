"""Who is in a tenant: its user ids and a user's project ids, with how many memories each holds.

Read from `memories` alone (a user exists here once something of theirs was stored, whatever its status;
an erase removes them). Every statement names the tenant; RLS is the second wall.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from app.db.models import Memory
from app.tenancy.types import TenantId
from app.vocabulary import LIVE_STATUSES, SPACE_USER


@dataclass(frozen=True, slots=True)
class Holding:
    """One user id or project id and its memories: every stored row, and those recall can see."""

    key: str
    memories: int
    live: int


class Directory:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def users(self, *, after: str | None, limit: int) -> list[Holding]:
        """User ids in order, after `after`; `limit + 1` rows so the caller knows whether more follow.

        Grouped in the order of `ix_memories_scope_rows` (tenant_id, user_id, ...), so a page reads its
        users' index entries and stops. A shared space's memories (user_id '', the least string) are
        no user's.
        """
        return await self._holdings(Memory.user_id, [Memory.user_id > SPACE_USER], after=after, limit=limit)

    async def projects(self, user_id: str, *, after: str | None, limit: int) -> list[Holding]:
        """A user's project ids in order, after `after` (global memories, project_id null, are not one)."""
        scope = [Memory.user_id == user_id, Memory.project_id.is_not(None)]
        return await self._holdings(Memory.project_id, scope, after=after, limit=limit)

    async def _holdings(
        self,
        key: InstrumentedAttribute[Any],
        conditions: list[ColumnElement[bool]],
        *,
        after: str | None,
        limit: int,
    ) -> list[Holding]:
        where = [Memory.tenant_id == self.tenant, *conditions]
        if after is not None:
            where.append(key > after)
        query = (
            select(key.label("key"), *_counts()).where(*where).group_by(key).order_by(key).limit(limit + 1)
        )
        rows = (await self.session.execute(query)).all()
        return [Holding(r.key, r.memories, r.live) for r in rows]


def _counts() -> tuple[ColumnElement[int], ColumnElement[int]]:
    return (
        func.count().label("memories"),
        func.count().filter(Memory.status.in_(LIVE_STATUSES)).label("live"),
    )
