"""/v1/spaces: shared spaces, the agents granted on them, and promotion proposals into them.
HTTP <-> SpaceService only; a promotion is decided through /v1/dream/proposals/{id}/approve|reject."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, delete, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter

from app.api.dream_schemas import ProposalOut
from app.api.guards import require_bearer
from app.api.schemas import NO_NUL
from app.api.space_schemas import SPACE_NAME, GrantIn, GrantOut, PromotionIn, SpaceIn, SpaceList, SpaceOut
from app.spaces.service import SpaceService

Spaces = NamedDependency[SpaceService]
SpacePath = Annotated[str, PathParameter(max_length=100, pattern=SPACE_NAME)]
AgentPath = Annotated[str, PathParameter(max_length=200, pattern=NO_NUL)]


class SpaceController(Controller):
    path = "/v1/spaces"
    guards = [require_bearer]
    tags = ["spaces"]

    @post("/", status_code=201)
    async def create(self, data: JSONBody[SpaceIn], spaces: Spaces) -> SpaceOut:
        view = await spaces.create(data.name, description=data.description, auto_approve=data.auto_approve)
        return SpaceOut.of(view)

    @get("/")
    async def list_spaces(self, spaces: Spaces) -> SpaceList:
        return SpaceList(items=[SpaceOut.of(v) for v in await spaces.all()])

    @post("/{space:str}/grants", status_code=200)
    async def grant(self, space: SpacePath, data: JSONBody[GrantIn], spaces: Spaces) -> GrantOut:
        """Grant an agent on the space (or change its grant): it reads the space's memories."""
        return GrantOut.of(await spaces.grant(space, data.agent_id, can_propose=data.can_propose))

    @delete("/{space:str}/grants/{agent_id:str}", status_code=200)
    async def revoke(self, space: SpacePath, agent_id: AgentPath, spaces: Spaces) -> GrantOut:
        """Revoke an agent's grant; returns what was revoked."""
        return GrantOut.of(await spaces.revoke(space, agent_id))

    @post("/{space:str}/promotions", status_code=201)
    async def promote(self, space: SpacePath, data: JSONBody[PromotionIn], spaces: Spaces) -> ProposalOut:
        """Propose a memory for the space: pending until approved (applied at once if the space
        auto-approves)."""
        return ProposalOut.of(await spaces.propose(space, data.memory_id, data.agent_id))
