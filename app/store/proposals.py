"""Dream proposals: stored by the write path and by dreams, paged for review, locked for apply."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import DreamProposal
from app.store.pages import Keyset, Page, keyset_page
from app.store.scope import scope_clause
from app.store.sql import any_id
from app.tenancy.types import TenantId
from app.vocabulary import ProposalKind, ProposalStatus, Scope

OPEN_STATUSES = (ProposalStatus.PROPOSED, ProposalStatus.APPROVED)


class ProposalStore:
    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    def _user(self, user_id: str) -> Any:
        return scope_clause(Scope.of_user(self.tenant, user_id, None), table="dream_proposals")

    def add(
        self,
        scope: Scope,
        *,
        kind: ProposalKind,
        target_ids: list[uuid.UUID],
        payload: dict[str, Any],
        rationale: str,
        model: str | None,
    ) -> DreamProposal:
        proposal = DreamProposal(
            tenant_id=self.tenant,
            id=uuid.uuid4(),
            user_id=scope.user_id,
            project_id=scope.project_id,
            kind=kind,
            target_ids=target_ids,
            payload=payload,
            rationale=rationale,
            status=ProposalStatus.PROPOSED,
            model=model,
        )
        self.session.add(proposal)
        return proposal

    async def get(self, proposal_id: uuid.UUID, *, for_update: bool = False) -> DreamProposal | None:
        query = select(DreamProposal).where(
            DreamProposal.tenant_id == self.tenant, DreamProposal.id == proposal_id
        )
        if for_update:
            query = query.with_for_update()
        return (await self.session.scalars(query)).first()

    async def page(
        self, scope: Scope, keyset: Keyset, *, status: ProposalStatus | None = None
    ) -> Page[DreamProposal]:
        """Newest first; the scope's (a project: its own and the user's global ones)."""
        query = select(DreamProposal).where(scope_clause(scope, table="dream_proposals"))
        if status is not None:
            query = query.where(DreamProposal.status == status)
        return await keyset_page(self.session, query, DreamProposal, keyset)

    async def undecided_or_refused(self, user_id: str) -> list[DreamProposal]:
        """Proposed, approved or rejected: what a new dream must not propose again."""
        query = select(DreamProposal).where(
            self._user(user_id), DreamProposal.status.in_([*OPEN_STATUSES, ProposalStatus.REJECTED])
        )
        return list((await self.session.scalars(query)).all())

    async def open_about(self, memory_id: uuid.UUID) -> list[DreamProposal]:
        """Proposed or approved proposals that name this memory."""
        query = select(DreamProposal).where(
            DreamProposal.tenant_id == self.tenant,
            DreamProposal.target_ids.contains([memory_id]),
            DreamProposal.status.in_(OPEN_STATUSES),
        )
        return list((await self.session.scalars(query)).all())

    async def for_apply(
        self, *, user_id: str | None = None, ids: Sequence[uuid.UUID] | None = None
    ) -> list[DreamProposal]:
        """A user's open proposals, or the given ones, oldest first, locked until the transaction ends."""
        query = select(DreamProposal).where(DreamProposal.tenant_id == self.tenant)
        if ids is not None:
            query = query.where(DreamProposal.id == any_id(ids))
        if user_id is not None:
            query = query.where(self._user(user_id), DreamProposal.status.in_(OPEN_STATUSES))
        query = query.order_by(DreamProposal.created_at, DreamProposal.id).with_for_update()
        return list((await self.session.scalars(query)).all())
