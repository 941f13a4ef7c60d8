"""All SQL of dreaming: the user's live memories, near-duplicate pairs, and proposals."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Float, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from app.db.models import DreamProposal, Memory
from app.tenancy.types import TenantId
from app.vocabulary import LIVE_STATUSES, MemoryStatus, ProposalStatus

OPEN_STATUSES = (ProposalStatus.PROPOSED, ProposalStatus.APPROVED)


class DreamRepository:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def live_memories(
        self, user_id: str, project_id: str | None, now: datetime, limit: int
    ) -> list[Memory]:
        """The user's live, unexpired memories (in a project: its own and the global ones), newest first."""
        conditions: list[Any] = [
            Memory.tenant_id == self.tenant,
            Memory.user_id == user_id,
            Memory.status.in_(LIVE_STATUSES),
            or_(Memory.expires_at.is_(None), Memory.expires_at > now),
        ]
        if project_id is not None:
            conditions.append(or_(Memory.project_id.is_(None), Memory.project_id == project_id))
        query = select(Memory).where(*conditions).order_by(Memory.valid_from.desc(), Memory.id).limit(limit)
        return list((await self.session.scalars(query)).all())

    async def near_duplicate_pairs(
        self, ids: Sequence[uuid.UUID], embed_model: str, min_cosine: float
    ) -> list[tuple[uuid.UUID, uuid.UUID, float]]:
        """Pairs among `ids` of the same type and project whose cosine is at least `min_cosine`.

        Exact, over the few hundred memories a dream looks at (quadratic, but on that small set).
        """
        if len(ids) < 2:
            return []
        a, b = aliased(Memory), aliased(Memory)
        cosine = (1 - a.embedding.op("<=>", return_type=Float)(b.embedding)).label("cosine")
        query = (
            select(a.id, b.id, cosine)
            .join(
                b,
                and_(
                    b.tenant_id == a.tenant_id,
                    b.id > a.id,
                    b.type == a.type,
                    b.project_id.is_not_distinct_from(a.project_id),
                    b.embed_model == a.embed_model,
                ),
            )
            .where(
                a.tenant_id == self.tenant,
                a.id.in_(list(ids)),
                b.id.in_(list(ids)),
                a.embed_model == embed_model,
                a.status == MemoryStatus.ACTIVE,
                b.status == MemoryStatus.ACTIVE,
                a.embedding.is_not(None),
                b.embedding.is_not(None),
                cosine >= min_cosine,
            )
        )
        rows = (await self.session.execute(query)).all()
        return [(x, y, float(c)) for x, y, c in rows]

    async def undecided_or_refused(self, user_id: str) -> list[DreamProposal]:
        """Proposed, approved or rejected: what a new dream must not propose again."""
        query = select(DreamProposal).where(
            DreamProposal.tenant_id == self.tenant,
            DreamProposal.user_id == user_id,
            DreamProposal.status.in_([*OPEN_STATUSES, ProposalStatus.REJECTED]),
        )
        return list((await self.session.scalars(query)).all())

    async def get(self, proposal_id: uuid.UUID, *, for_update: bool = False) -> DreamProposal | None:
        query = select(DreamProposal).where(
            DreamProposal.tenant_id == self.tenant, DreamProposal.id == proposal_id
        )
        if for_update:
            query = query.with_for_update()
        return (await self.session.scalars(query)).first()

    async def for_apply(
        self, *, user_id: str | None = None, ids: Sequence[uuid.UUID] | None = None
    ) -> list[DreamProposal]:
        """A user's open proposals, or the given ones, oldest first, locked until the transaction ends."""
        conditions: list[Any] = [DreamProposal.tenant_id == self.tenant]
        if ids is not None:
            conditions.append(DreamProposal.id.in_(list(ids)))
        if user_id is not None:
            conditions += [DreamProposal.user_id == user_id, DreamProposal.status.in_(OPEN_STATUSES)]
        query = (
            select(DreamProposal)
            .where(*conditions)
            .order_by(DreamProposal.created_at, DreamProposal.id)
            .with_for_update()
        )
        return list((await self.session.scalars(query)).all())

    async def page(
        self,
        user_id: str,
        *,
        status: str | None,
        project_id: str | None,
        after: tuple[datetime, uuid.UUID] | None,
        limit: int,
    ) -> list[DreamProposal]:
        """Newest first (keyset on created_at, id); `limit + 1` rows to detect a next page."""
        conditions: list[Any] = [DreamProposal.tenant_id == self.tenant, DreamProposal.user_id == user_id]
        if status is not None:
            conditions.append(DreamProposal.status == status)
        if project_id is not None:
            conditions.append(or_(DreamProposal.project_id.is_(None), DreamProposal.project_id == project_id))
        if after is not None:
            created, pid = after
            conditions.append(
                or_(
                    DreamProposal.created_at < created,
                    and_(DreamProposal.created_at == created, DreamProposal.id < pid),
                )
            )
        query = (
            select(DreamProposal)
            .where(*conditions)
            .order_by(DreamProposal.created_at.desc(), DreamProposal.id.desc())
            .limit(limit + 1)
        )
        return list((await self.session.scalars(query)).all())

    async def memories_for_update(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Memory]:
        """The proposal's targets, locked in id order (so two applies cannot deadlock on them)."""
        query = (
            select(Memory)
            .where(Memory.tenant_id == self.tenant, Memory.id.in_(sorted(ids)))
            .order_by(Memory.id)
            .with_for_update()
        )
        return {m.id: m for m in (await self.session.scalars(query)).all()}
