"""/v1/dream: propose, review (approve / reject) and apply consolidations. HTTP <-> DreamService only."""

from __future__ import annotations

import uuid

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from app.api.dream_schemas import ApplyIn, ApplyOut, DreamIn, DreamOut, ProposalOut, ProposalPage
from app.api.guards import require_bearer
from app.api.memories import Limit, MaybeIdent, QueryIdent
from app.dream.service import DreamService
from app.vocabulary import ProposalStatus

ProposalId = FromPath[uuid.UUID]
Dreams = NamedDependency[DreamService]


class DreamController(Controller):
    path = "/v1/dream"
    guards = [require_bearer]
    tags = ["dreaming"]

    @post("/", status_code=200)
    async def dream(self, data: JSONBody[DreamIn], dream_service: Dreams) -> DreamOut:
        result = await dream_service.dream(data.user_id, data.project_id)
        return DreamOut(
            proposals=[ProposalOut.of(p) for p in result.proposals],
            mode=result.mode,
            created=result.created,
            dropped=result.dropped,
        )

    @get("/proposals")
    async def proposals(
        self,
        dream_service: Dreams,
        user_id: QueryIdent,
        status: FromQuery[ProposalStatus | None] = None,
        project_id: MaybeIdent = None,
        limit: Limit = 50,
        cursor: MaybeIdent = None,
    ) -> ProposalPage:
        page = await dream_service.list_proposals(
            user_id, status=status, project_id=project_id, limit=limit, cursor=cursor
        )
        return ProposalPage(items=[ProposalOut.of(p) for p in page.items], next_cursor=page.next_cursor)

    @post("/proposals/{proposal_id:uuid}/approve", status_code=200)
    async def approve(self, proposal_id: ProposalId, dream_service: Dreams) -> ProposalOut:
        return ProposalOut.of(await dream_service.decide(proposal_id, approve=True))

    @post("/proposals/{proposal_id:uuid}/reject", status_code=200)
    async def reject(self, proposal_id: ProposalId, dream_service: Dreams) -> ProposalOut:
        return ProposalOut.of(await dream_service.decide(proposal_id, approve=False))

    @post("/apply", status_code=200)
    async def apply(self, data: JSONBody[ApplyIn], dream_service: Dreams) -> ApplyOut:
        report = await dream_service.apply(user_id=data.user_id, proposal_ids=data.proposal_ids)
        return ApplyOut.of(report)
