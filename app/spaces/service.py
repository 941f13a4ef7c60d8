"""Shared spaces: create, list, grant and revoke agents, and propose a memory's promotion into a space.

A promotion is a dream proposal of kind `promote` on the proposer's memory: nothing is written into the
space until a person approves it (`DreamService.decide`), or at once when the space's policy is
`auto_approve`. Approval writes the space's copy through the normal write path (`app.dream.apply`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from app.context import RequestContext
from app.db.models import DreamProposal, Space, SpaceGrant
from app.dream.service import DreamService
from app.lib.errors import Conflict, Forbidden, NotFound
from app.memory.fingerprint import fingerprints
from app.store.events import NewEvent
from app.vocabulary import (
    LIVE_STATUSES,
    SPACE_USER,
    EventKind,
    ProposalKind,
    Scope,
)

AUTO_APPROVER = "policy:auto_approve"


@dataclass(frozen=True, slots=True)
class SpaceView:
    space: Space
    grants: list[SpaceGrant]


class SpaceService:
    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.spaces = ctx.store.spaces

    async def create(self, name: str, *, description: str | None, auto_approve: bool) -> SpaceView:
        space = await self.spaces.add(
            name, description=description, auto_approve=auto_approve, by=self.ctx.actor
        )
        if space is None:
            raise Conflict(f"space {name!r} already exists")
        return SpaceView(space, [])

    async def all(self) -> list[SpaceView]:
        spaces = await self.spaces.all()
        grants = await self.spaces.grants([s.name for s in spaces]) if spaces else []
        return [SpaceView(s, [g for g in grants if g.space == s.name]) for s in spaces]

    async def _space(self, name: str) -> Space:
        space = await self.spaces.get(name)
        if space is None:
            raise NotFound(f"space {name!r} not found")
        return space

    async def grant(self, name: str, agent_id: str, *, can_propose: bool) -> SpaceGrant:
        await self._space(name)
        return await self.spaces.grant(name, agent_id, can_propose=can_propose, by=self.ctx.actor)

    async def revoke(self, name: str, agent_id: str) -> SpaceGrant:
        await self._space(name)
        revoked = await self.spaces.revoke(name, agent_id)
        if revoked is None:
            raise NotFound(f"agent {agent_id!r} has no grant on space {name!r}")
        return revoked

    async def propose(self, name: str, memory_id: uuid.UUID, agent_id: str) -> DreamProposal:
        """A pending promotion of the agent's memory (its own or its user's) into the space."""
        space = await self._space(name)
        grant = await self.spaces.grant_of(name, agent_id)
        if grant is None or not grant.can_propose:
            raise Forbidden(f"agent {agent_id!r} may not propose into space {name!r}")
        memory = await self.ctx.store.reads.get(memory_id, for_update=True)
        if memory is None or memory.user_id == SPACE_USER or memory.agent_id not in (None, agent_id):
            raise NotFound(f"memory {memory_id} not found")  # another agent's memory is not this one's
        if memory.status not in LIVE_STATUSES:
            raise Conflict(f"memory {memory_id} is {memory.status}; only a current memory can be promoted")
        pending = await self.ctx.store.proposals.open_about(memory.id)
        if any(p.kind == ProposalKind.PROMOTE and p.payload.get("space") == name for p in pending):
            raise Conflict(f"memory {memory_id} already has an open promotion into space {name!r}")
        payload = {
            "space": name,
            "agent_id": agent_id,
            "proposed_by": self.ctx.actor,
            "fingerprint": fingerprints([memory]),
        }
        proposal = self.ctx.store.proposals.add(
            Scope(self.ctx.tenant, memory.user_id, memory.project_id),
            kind=ProposalKind.PROMOTE,
            target_ids=[memory.id],
            payload=payload,
            rationale=f"agent {agent_id} proposes this memory for space {name}",
            model=None,
        )
        await self.ctx.store.flush()
        details = {
            "proposal_id": str(proposal.id),
            "proposal_kind": str(ProposalKind.PROMOTE),
            "space": name,
            "agent_id": agent_id,
        }
        reason = f"promotion into space {name} proposed by agent {agent_id}"
        await self.ctx.store.events.record(NewEvent.about(memory, EventKind.PROPOSED, reason, details))
        if space.auto_approve:
            return await DreamService(self.ctx, None).decide(proposal.id, approve=True, by=AUTO_APPROVER)
        return proposal
