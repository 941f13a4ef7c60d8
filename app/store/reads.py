"""Reads of memories: one by id (optionally locked), several, a scope's live memories, a filtered list,
and a tenant's (or user's) counts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Text, case, cast, func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory
from app.store.bm25 import lexemes_of
from app.store.candidates import or_tsquery
from app.store.moments import moment_params, moment_sql
from app.store.pages import Keyset, Page, keyset_page
from app.store.scope import scope_clause
from app.store.sql import any_id
from app.tenancy.types import TenantId
from app.vocabulary import LIVE_STATUSES, MemoryStatus, MemoryType, Moment, Scope


class MemoryReads:
    """Memories of one tenant, read."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def get(self, memory_id: uuid.UUID, *, for_update: bool = False) -> Memory | None:
        query = select(Memory).where(Memory.tenant_id == self.tenant, Memory.id == memory_id)
        if for_update:
            query = query.with_for_update()
        return (await self.session.scalars(query)).first()

    async def get_many(
        self, ids: Sequence[uuid.UUID], *, for_update: bool = False
    ) -> dict[uuid.UUID, Memory]:
        """The memories with these ids; locked in id order (so two writers cannot deadlock on them)."""
        if not ids:
            return {}
        query = select(Memory).where(Memory.tenant_id == self.tenant, Memory.id == any_id(sorted(ids)))
        if for_update:
            query = query.order_by(Memory.id).with_for_update()
        return {m.id: m for m in (await self.session.scalars(query)).all()}

    async def live(
        self,
        scope: Scope,
        *,
        subject: str | None = None,
        now: datetime | None = None,
        newest: int | None = None,
    ) -> list[Memory]:
        """The scope's live memories (of one slot subject; unexpired at `now`; the `newest` few)."""
        query = select(Memory).where(scope_clause(scope, live=True, now=now))
        if subject is not None:
            query = query.where(Memory.subject == subject)
        if newest is not None:
            query = query.order_by(Memory.valid_from.desc(), Memory.id).limit(newest)
        return list((await self.session.scalars(query)).all())

    async def page(
        self,
        scope: Scope,
        keyset: Keyset,
        *,
        status: MemoryStatus | None = None,
        mtype: MemoryType | None = None,
        subject: str | None = None,
        words: str | None = None,
        at: Moment | None = None,
    ) -> Page[Memory]:
        """A filtered list, newest first. `words`: memories that match any of its words (full text), or
        when it has none, whose content contains it as typed (no wildcards); `at`: an instant, the
        memories current at it (app.store.moments)."""
        query = select(Memory).where(scope_clause(scope))
        if at is not None:
            query = query.where(_current_at(at))
        if status is not None:
            query = query.where(Memory.status == status)
        if mtype is not None:
            query = query.where(Memory.type == mtype)
        if subject is not None:
            query = query.where(Memory.subject == subject)
        if words:
            tsq = or_tsquery(words)
            query = query.where(
                Memory.content_tsv.op("@@")(func.to_tsquery("english", tsq))
                if tsq
                else Memory.content.icontains(words, autoescape=True)
            )
        return await keyset_page(self.session, query, Memory, keyset)

    async def current_among(self, ids: Sequence[uuid.UUID], at: Moment) -> list[uuid.UUID]:
        """Which of these memories were current at the instant `at`."""
        query = select(Memory.id).where(
            Memory.tenant_id == self.tenant, Memory.id == any_id(ids), _current_at(at)
        )
        return list((await self.session.scalars(query)).all())

    async def stats(self, user_id: str | None, embed_model: str) -> dict[str, Any]:
        conditions: list[Any] = [
            Memory.tenant_id == self.tenant
            if user_id is None
            else scope_clause(Scope.of_user(self.tenant, user_id, None))
        ]
        by_status = dict(
            (
                await self.session.execute(
                    select(Memory.status, func.count()).where(*conditions).group_by(Memory.status)
                )
            ).all()
        )
        by_type = dict(
            (
                await self.session.execute(
                    select(Memory.type, func.count()).where(*conditions).group_by(Memory.type)
                )
            ).all()
        )
        mismatched = await self.session.scalar(
            select(func.count()).where(
                *conditions,
                Memory.status.in_(LIVE_STATUSES),
                or_(Memory.embed_model.is_distinct_from(embed_model), Memory.embedding.is_(None)),
            )
        )
        return {
            "total": sum(by_status.values()),
            "by_status": {str(k): int(v) for k, v in by_status.items()},
            "by_type": {str(k): int(v) for k, v in by_type.items()},
            "mismatched": int(mismatched or 0),
        }

    async def similarity_inputs(
        self, ids: Sequence[uuid.UUID], embed_model: str
    ) -> dict[uuid.UUID, tuple[Sequence[float] | None, dict[str, int]]]:
        """Each memory's vector (None when another model embedded it) and lexemes with their tf
        (app.memory.similarity)."""
        if not ids:
            return {}
        vector = case((Memory.embed_model == embed_model, Memory.embedding), else_=None)
        query = select(Memory.id, vector, cast(Memory.content_tsv, Text)).where(
            Memory.tenant_id == self.tenant, Memory.id == any_id(ids)
        )
        rows = (await self.session.execute(query)).all()
        return {row[0]: (row[1], lexemes_of(row[2])) for row in rows}


def _current_at(at: Moment) -> Any:
    """The instant's predicate (app.store.moments) with its value bound, for an ORM statement."""
    return text(moment_sql(at)).bindparams(**moment_params(at))
