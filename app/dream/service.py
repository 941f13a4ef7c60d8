"""Dreaming, the propose / approve / reject half: nothing here changes a memory.

`dream` asks the model (when the app has an online one) or the offline rules for proposals, validates
them against the user's live memories and stores them as `proposed`, each with its targets'
fingerprints. Applying approved proposals is `app.dream.apply`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime

from app.agent.providers.base import ChatProvider, ChatTurn, ProviderError
from app.context import RequestContext
from app.db.models import DreamProposal, Memory
from app.dream.apply import DreamApplier
from app.dream.digest import digestible, dream_messages
from app.dream.models import ApplyReport, Candidate, DreamResult, Known, known_of
from app.dream.offline import near_duplicates, offline_forgets, offline_merges
from app.dream.output import ModelOutputError, parse_model_output
from app.dream.validate import validate_model_proposals
from app.lib.errors import Conflict, NotFound, ValidationFailed
from app.lib.logging import get_logger
from app.memory.fingerprint import fingerprints
from app.store.events import NewEvent
from app.store.pages import MAX_PAGE, Keyset, Page
from app.store.usage import UsageRepository
from app.usage.meter import UsageMeter, current_meter
from app.vocabulary import EventKind, ProposalKind, ProposalStatus, Reach, Scope

log = get_logger("engram.dream")
OFFLINE = "offline"


def _refusal_key(kind: str, ids: Sequence[uuid.UUID], prints: object) -> tuple[str, frozenset[str]]:
    """A rejected proposal blocks the same proposal about the same, unchanged memories."""
    marks = prints if isinstance(prints, dict) else {}
    return kind, frozenset(f"{i}:{marks.get(str(i), '')}" for i in ids)


class DreamService:
    """Proposals for one tenant's users; `chat` is the app's model, if it has an online one."""

    def __init__(self, ctx: RequestContext, chat: ChatProvider | None) -> None:
        self.ctx = ctx
        self.chat = chat if chat is not None and chat.mode == "online" else None

    def _scope(self, user_id: str, project_id: str | None) -> Scope:
        """A user's memories or proposals; in a project, its own and the user's global ones."""
        return Scope.of_user(self.ctx.tenant, user_id, project_id, in_project=Reach.WITH_GLOBAL)

    async def dream(self, user_id: str, project_id: str | None = None) -> DreamResult:
        """One dreaming pass over the user's live memories; returns the user's open queue."""
        if not user_id.strip():
            raise ValidationFailed("user_id must not be empty")
        now = self.ctx.clock.now()
        newest = self.ctx.settings.dream_max_memories
        live = await self.ctx.store.reads.live(self._scope(user_id, project_id), now=now, newest=newest)
        known = {m.id: known_of(m) for m in live}
        mode, dropped, candidates = OFFLINE, 0, None
        if self.chat is not None:
            try:
                candidates, dropped = await self._from_model(self.chat, user_id, known, now)
                mode = "model"
            except (ProviderError, ModelOutputError) as exc:
                log.warning("dream_model_failed", error_type=type(exc).__name__, error=str(exc)[:200])
                mode = "degraded"
        if candidates is None:
            candidates = await self._offline(known, now)
        model = self.chat.model if mode == "model" and self.chat is not None else None
        created = await self._store(user_id, candidates, {m.id: m for m in live}, model)
        queue = await self.ctx.store.proposals.page(
            self._scope(user_id, project_id), Keyset(None, MAX_PAGE), status=ProposalStatus.PROPOSED
        )
        return DreamResult(queue.items, mode, created, dropped)

    async def _from_model(
        self, chat: ChatProvider, user_id: str, known: Mapping[uuid.UUID, Known], now: datetime
    ) -> tuple[list[Candidate], int]:
        visible = {k.id: k for k in digestible(known.values())}
        if not visible:
            return [], 0
        turn = await chat.complete(dream_messages(visible.values(), now), json_mode=True)
        self._meter(user_id, turn)
        raw, unreadable = parse_model_output(turn.content)
        kept, dropped = validate_model_proposals(raw, visible, max_chars=self.ctx.settings.max_content_chars)
        log.info(
            "dream_model_answer",
            model=turn.model,
            kept=len(kept),
            dropped=len(dropped) + unreadable,
            reasons=sorted(set(dropped)),
        )
        return kept, len(dropped) + unreadable

    def _meter(self, user_id: str, turn: ChatTurn) -> None:
        """To the request's meter when there is one; else written as a usage event right here."""
        meter = current_meter()
        if meter is not None:
            meter.record("dream", turn.model, turn.usage, turn.latency_ms)
            return
        own = UsageMeter()
        own.record("dream", turn.model, turn.usage, turn.latency_ms)
        UsageRepository(self.ctx.session, self.ctx.tenant).add_all(
            own, user_id=user_id, session_id=None, request_id=None
        )

    async def _offline(self, known: Mapping[uuid.UUID, Known], now: datetime) -> list[Candidate]:
        settings, embedder, policy = self.ctx.settings, self.ctx.embedder, self.ctx.policy
        threshold = settings.dream_merge_min_similarity
        if threshold is None:
            threshold = embedder.thresholds.review
        active = [k for k in known.values() if not k.pinned]  # live and not pinned: active
        inputs = await self.ctx.store.reads.similarity_inputs([k.id for k in active], embedder.name)
        pairs = near_duplicates(active, inputs, threshold, k1=policy.bm25_k1, b=policy.bm25_b)
        merges = offline_merges(pairs, known)
        forgets = offline_forgets(
            known.values(),
            now,
            half_lives=self.ctx.policy.half_lives,
            importance_below=settings.dream_forget_importance_below,
            decayed_below=settings.dream_forget_decayed_below,
        )
        return merges + forgets

    async def _store(
        self,
        user_id: str,
        candidates: list[Candidate],
        live: Mapping[uuid.UUID, Memory],
        model: str | None,
    ) -> int:
        """Store new candidates as `proposed`. One already open for the same targets is not repeated, nor
        one a person rejected while its targets have not changed since."""
        existing = await self.ctx.store.proposals.undecided_or_refused(user_id)
        open_keys = {
            (p.kind, frozenset(p.target_ids)) for p in existing if p.status != ProposalStatus.REJECTED
        }
        refused = {
            _refusal_key(p.kind, p.target_ids, p.payload.get("fingerprint"))
            for p in existing
            if p.status == ProposalStatus.REJECTED
        }
        created = 0
        for c in candidates:
            replaced = (ProposalKind.SUPERSEDE, c.key[1])  # the write path already asked about these two
            if c.key in open_keys or (c.kind == ProposalKind.MERGE and replaced in open_keys):
                continue
            if not c.target_ids or any(i not in live for i in c.target_ids):
                continue  # never reached after validation; the last wall before anything is stored
            targets = [live[i] for i in c.target_ids]
            prints = fingerprints(targets)
            if _refusal_key(c.kind, c.target_ids, prints) in refused:
                continue
            projects = {t.project_id for t in targets}
            payload = {**c.payload, "fingerprint": prints, "proposed_by": model or OFFLINE}
            self.ctx.store.proposals.add(
                Scope(self.ctx.tenant, user_id, projects.pop() if len(projects) == 1 else None),
                kind=c.kind,
                target_ids=list(c.target_ids),
                payload=payload,
                rationale=c.rationale,
                model=model,
            )
            open_keys.add(c.key)
            created += 1
        await self.ctx.store.flush()
        return created

    async def list_proposals(
        self,
        user_id: str,
        *,
        status: ProposalStatus | None = None,
        project_id: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[DreamProposal]:
        keyset = Keyset.parse(cursor, limit, uuid.UUID)
        return await self.ctx.store.proposals.page(self._scope(user_id, project_id), keyset, status=status)

    async def decide(self, proposal_id: uuid.UUID, *, approve: bool, by: str | None = None) -> DreamProposal:
        """Approve (from proposed) or reject (from proposed or approved); repeating a decision is a no-op.

        `by`: who decided, when not the request's actor (a tenant policy). An approved promotion is
        applied at once: approving it is what makes the memory visible in its space."""
        proposal = await self.ctx.store.proposals.get(proposal_id, for_update=True)
        if proposal is None:
            raise NotFound(f"proposal {proposal_id} not found")
        target = ProposalStatus.APPROVED if approve else ProposalStatus.REJECTED
        if proposal.status == target:
            return proposal
        allowed = {ProposalStatus.PROPOSED} if approve else {ProposalStatus.PROPOSED, ProposalStatus.APPROVED}
        if proposal.status not in allowed:
            verb = "approved" if approve else "rejected"
            raise Conflict(f"the proposal is {proposal.status}; it can no longer be {verb}")
        proposal.status = target
        proposal.decided_at = self.ctx.clock.now()
        decided_by = by or self.ctx.actor
        proposal.payload = {**proposal.payload, "decided_by": decided_by}
        await self.ctx.store.flush()
        await self.ctx.store.events.record(*_decision_events(proposal, approve=approve, by=decided_by))
        if approve and proposal.kind == ProposalKind.PROMOTE:
            await self.apply(proposal_ids=[proposal.id])
        return proposal

    async def apply(
        self, *, user_id: str | None = None, proposal_ids: list[uuid.UUID] | None = None
    ) -> ApplyReport:
        """Apply approved proposals (see `app.dream.apply`)."""
        return await DreamApplier(self.ctx).apply(user_id=user_id, proposal_ids=proposal_ids)


def _decision_events(proposal: DreamProposal, *, approve: bool, by: str) -> list[NewEvent]:
    """A decision is an event of every memory the proposal names (who decided is the event's actor)."""
    kind = EventKind.PROPOSAL_APPROVED if approve else EventKind.PROPOSAL_REJECTED
    details = {"proposal_id": str(proposal.id), "proposal_kind": str(proposal.kind)}
    return [
        NewEvent(target, proposal.user_id, proposal.project_id, kind, None, details, actor=by)
        for target in proposal.target_ids
    ]
