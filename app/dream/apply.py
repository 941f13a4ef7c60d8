"""Dreaming, the apply half: approved proposals only, each re-validated, all in the caller's transaction.

A merge writes one new memory (source `dream`) and supersedes its targets; a forget forgets; a
resalience sets salience; a supersede retires the old memory in favour of the new one. Nothing is
deleted, and every retired memory's `superseded` event names its successor and the rule
`approved_proposal`, so history can say why.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from app.context import RequestContext
from app.db.models import DreamProposal, Memory
from app.dream.models import ApplyOutcome, ApplyReport
from app.dream.revalidate import stale_reason
from app.lib.errors import NotFound, ValidationFailed
from app.memory.models import RememberInput
from app.memory.retire import retire
from app.memory.slots import slot_lock_key
from app.memory.writer import MemoryWriter
from app.store.events import NewEvent
from app.vocabulary import (
    SPACE_USER,
    EventKind,
    MemoryStatus,
    MemoryType,
    Privacy,
    ProposalKind,
    ProposalStatus,
    Source,
    SupersedeRule,
)

MAX_IDS = 500
_PRIVACY_ORDER = [Privacy.PUBLIC, Privacy.PRIVATE, Privacy.SENSITIVE]
Handler = Callable[[DreamProposal, list[Memory], ApplyReport, datetime], Awaitable[uuid.UUID | None]]


def _strictest(values: Sequence[Privacy]) -> Privacy:
    return max(values, key=_PRIVACY_ORDER.index)


def merged_input(proposal: DreamProposal, targets: list[Memory]) -> RememberInput:
    """The merged memory: the proposal's text; the targets' strongest scores, strictest privacy, all tags."""
    payload = proposal.payload
    expiries = [t.expires_at for t in targets]
    return RememberInput(
        user_id=proposal.user_id,
        content=str(payload["content"]),
        type=MemoryType(payload["type"]),
        subject=payload.get("subject"),
        project_id=targets[0].project_id,
        importance=float(payload["importance"]),
        confidence=max(t.confidence for t in targets),
        privacy=_strictest([t.privacy for t in targets]),
        tags=sorted({tag for t in targets for tag in t.tags}),
        expires_at=max(e for e in expiries if e is not None) if all(expiries) else None,
        pinned=any(t.status == MemoryStatus.PINNED for t in targets),
        observed_at=max(t.valid_from for t in targets),
        source=Source.DREAM,
        source_model=proposal.model,
        agent_id=targets[0].agent_id,  # one agent's memories only (`stale_reason`)
    )


def promoted_input(proposal: DreamProposal, source: Memory) -> RememberInput:
    """The space's copy of a promoted memory: what it says and its scores; no user, agent or project."""
    return RememberInput(
        user_id=SPACE_USER,
        space=str(proposal.payload["space"]),
        content=source.content,
        type=source.type,
        subject=source.subject,
        summary=source.summary,
        importance=source.importance,
        confidence=source.confidence,
        privacy=source.privacy,
        tags=list(source.tags),
        expires_at=source.expires_at,
        observed_at=source.valid_from,
        source=Source.PROMOTION,
    )


class DreamApplier:
    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self._events: list[NewEvent] = []
        self._handlers: dict[str, Handler] = {
            ProposalKind.MERGE: self._merge,
            ProposalKind.FORGET: self._forget,
            ProposalKind.RESALIENCE: self._resalience,
            ProposalKind.SUPERSEDE: self._supersede,
            ProposalKind.PROMOTE: self._promote,
        }

    async def apply(
        self, *, user_id: str | None = None, proposal_ids: Sequence[uuid.UUID] | None = None
    ) -> ApplyReport:
        """Apply a user's approved proposals, or the named ones (any not approved is skipped)."""
        if (user_id is None) == (proposal_ids is None):
            raise ValidationFailed("give exactly one of user_id and proposal_ids")
        if proposal_ids is not None:
            if not 1 <= len(proposal_ids) <= MAX_IDS:
                raise ValidationFailed(f"proposal_ids must hold between 1 and {MAX_IDS} ids")
            rows = await self.ctx.store.proposals.for_apply(ids=proposal_ids)
            missing = set(proposal_ids) - {p.id for p in rows}
            if missing:
                raise NotFound(f"proposal {min(missing)} not found")
        else:
            assert user_id is not None
            if not user_id.strip():
                raise ValidationFailed("user_id must not be empty")
            rows = await self.ctx.store.proposals.for_apply(user_id=user_id)
        report = ApplyReport()
        for proposal in rows:
            if proposal.status != ProposalStatus.APPROVED:
                report.skipped += 1
                report.results.append(ApplyOutcome(proposal.id, proposal.kind, "skipped", proposal.status))
                continue
            await self._apply_one(proposal, report)
        await self.ctx.store.flush()
        await self.ctx.store.events.record(*self._events)
        self._events = []
        return report

    async def _apply_one(self, proposal: DreamProposal, report: ApplyReport) -> None:
        now = self.ctx.clock.now()
        if proposal.kind == ProposalKind.MERGE and isinstance(proposal.payload.get("subject"), str):
            # The writer's slot lock, taken before the row locks, in the write path's order.
            tenant = str(self.ctx.tenant)
            key = slot_lock_key(
                tenant,
                proposal.user_id,
                proposal.project_id,
                proposal.payload["subject"],
                str(proposal.payload.get("type")),
            )
            await self.ctx.store.writes.lock([key])
        targets = await self.ctx.store.reads.get_many(proposal.target_ids, for_update=True)
        reason = stale_reason(proposal, targets, now) or await self._promotion_problem(proposal)
        if reason is not None:
            proposal.status = ProposalStatus.STALE
            proposal.payload = {**proposal.payload, "stale_reason": reason}
            report.stale += 1
            report.results.append(ApplyOutcome(proposal.id, proposal.kind, "stale", reason))
            return
        ordered = [targets[i] for i in proposal.target_ids]
        memory_id = await self._handlers[proposal.kind](proposal, ordered, report, now)
        proposal.status = ProposalStatus.APPLIED
        proposal.applied_at = now
        if memory_id is not None:
            into = "promoted_into" if proposal.kind == ProposalKind.PROMOTE else "merged_into"
            proposal.payload = {**proposal.payload, into: str(memory_id)}
        report.applied += 1
        report.results.append(ApplyOutcome(proposal.id, proposal.kind, "applied", None, memory_id))

    async def _promotion_problem(self, proposal: DreamProposal) -> str | None:
        """A promotion needs its space still there and its proposer still allowed to propose into it."""
        if proposal.kind != ProposalKind.PROMOTE:
            return None
        space, agent = proposal.payload.get("space"), proposal.payload.get("agent_id")
        if not isinstance(space, str) or await self.ctx.store.spaces.get(space) is None:
            return f"space {space!r} does not exist"
        grant = await self.ctx.store.spaces.grant_of(space, agent) if isinstance(agent, str) else None
        if grant is None or not grant.can_propose:
            return f"agent {agent!r} may no longer propose into space {space!r}"
        return None

    def _event(self, memory: Memory, kind: EventKind, reason: str, details: dict[str, Any]) -> None:
        self._events.append(NewEvent.about(memory, kind, reason, details))

    def _retire(self, old: Memory, new: Memory, proposal: DreamProposal, now: datetime) -> None:
        """`old` is superseded by `new` through the write path's one `retire`, naming the proposal."""
        payload = proposal.payload
        extra = {
            "proposal_id": str(proposal.id),
            "proposal_kind": proposal.kind,
            "proposed_by": payload.get("proposed_by", "write_path"),
            "proposed_rule": payload.get("rule"),
        }
        event = retire(
            old,
            new,
            rule=SupersedeRule.PROPOSAL,
            reason=f"{SupersedeRule.PROPOSAL}: {proposal.kind} proposal {proposal.id} was approved",
            now=now,
            cosine=payload.get("cosine"),
            extra=extra,
        )
        self._events.append(event)

    async def _merge(
        self, proposal: DreamProposal, targets: list[Memory], report: ApplyReport, now: datetime
    ) -> uuid.UUID:
        writer = MemoryWriter(self.ctx)
        reason = f"merge of {len(targets)} memories (approved dream proposal {proposal.id})"
        merged = await writer.create_without_decision(merged_input(proposal, targets), reason)
        merged_ids = [str(t.id) for t in targets]
        for target in targets:
            self._retire(target, merged, proposal, now)
        details = {
            "merged_ids": merged_ids,
            "proposal_id": str(proposal.id),
            "proposed_by": proposal.payload.get("proposed_by"),
        }
        self._event(merged, EventKind.MERGED, f"merged {len(targets)} memories", details)
        report.merged += 1
        return merged.id

    async def _forget(
        self, proposal: DreamProposal, targets: list[Memory], report: ApplyReport, now: datetime
    ) -> None:
        for target in targets:
            target.status = MemoryStatus.FORGOTTEN
            target.updated_at = now
            reason = f"approved dream proposal {proposal.id}: {proposal.rationale or 'forget'}"
            self._event(target, EventKind.FORGOTTEN, reason[:1000], {"proposal_id": str(proposal.id)})
            report.forgotten += 1

    async def _resalience(
        self, proposal: DreamProposal, targets: list[Memory], report: ApplyReport, now: datetime
    ) -> None:
        salience = float(proposal.payload["salience"])
        for target in targets:
            if target.salience == salience:
                continue
            details = {
                "fields": ["salience"],
                "from": target.salience,
                "to": salience,
                "proposal_id": str(proposal.id),
            }
            target.salience = salience
            target.updated_at = now
            self._event(
                target, EventKind.UPDATED, f"salience set by approved dream proposal {proposal.id}", details
            )
            report.resalienced += 1

    async def _supersede(
        self, proposal: DreamProposal, targets: list[Memory], report: ApplyReport, now: datetime
    ) -> None:
        by_id = {str(t.id): t for t in targets}
        old, new = by_id[proposal.payload["superseded"]], by_id[proposal.payload["successor"]]
        self._retire(old, new, proposal, now)
        report.superseded += 1

    async def _promote(
        self, proposal: DreamProposal, targets: list[Memory], report: ApplyReport, now: datetime
    ) -> uuid.UUID:
        """Write the space's copy through the write path (redaction, supersession within the space)."""
        [source] = targets
        [result] = await MemoryWriter(self.ctx).remember_many([promoted_input(proposal, source)])
        payload = proposal.payload
        details = {
            "proposal_id": str(proposal.id),
            "proposal_kind": str(proposal.kind),
            "space": payload["space"],
            "proposed_by": payload.get("proposed_by"),
            "proposer_agent": payload.get("agent_id"),
            "proposer_user": proposal.user_id,
            "approved_by": payload.get("decided_by", self.ctx.actor),
        }
        space = payload["space"]
        reason = f"promoted into space {space} ({result.action})"
        self._event(source, EventKind.PROMOTED, reason, {**details, "promoted_to": str(result.memory.id)})
        self._event(result.memory, EventKind.PROMOTED, reason, {**details, "promoted_from": str(source.id)})
        return result.memory.id
