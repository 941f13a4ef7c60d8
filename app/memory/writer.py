"""The write path (DESIGN.md): validate, redact, normalise the slot, embed in one batch, then decide
and write each memory under an advisory lock so concurrent writes to one slot serialise.

One code path for one item and for a batch: the lookups (`app/memory/lookups.py`) ask each question of
the store once for the whole write, the rows are flushed once at the end, and the write's events are
recorded in one statement.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy.orm.attributes import set_committed_value

from app.context import RequestContext
from app.db.models import Memory
from app.embeddings.base import numeric_tokens_differ
from app.memory.fingerprint import fingerprints
from app.memory.inferred import infer_slots
from app.memory.intake import Prepared, check, new_memory, prepare
from app.memory.lookups import WriteLookups
from app.memory.models import RememberInput, RememberResult
from app.memory.passage_index import PassageIndex, embed_planned
from app.memory.retire import retire
from app.memory.supersession import Action, Decision, Existing, decide_semantic, decide_slot
from app.store.access import Access
from app.store.events import NewEvent
from app.vocabulary import EventKind, ProposalKind, is_protected


class MemoryWriter:
    """Remembers one memory or a batch (one embedding call, one flush, one event statement per write)."""

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self._events: list[NewEvent] = []
        self._accessed: dict[uuid.UUID, tuple[Memory, Access]] = {}  # written again: an access

    async def remember_many(self, items: list[RememberInput]) -> list[RememberResult]:
        """Validate everything first (a bad item writes nothing), then write in order."""
        ctx, settings = self.ctx, self.ctx.settings
        for index, item in enumerate(items):
            check(item, index if len(items) > 1 else None, settings.max_content_chars)
        await ctx.ensure_room(len(items))  # the whole batch fits under the quota, or nothing is written
        now = ctx.clock.now()
        lapse = timedelta(seconds=settings.temporary_ttl_seconds)
        # Before the locks are taken: an inferred slot is locked like a given one.
        items = await infer_slots(ctx.store.writes, ctx.tenant, items, now, lapse)
        prepared = [prepare(item, ctx.tenant, now, settings.temporary_ttl_seconds) for item in items]
        passages = PassageIndex(ctx)
        plans = [passages.plan(p.content) for p in prepared]
        # One embedding call: the contents, with every long content's passages.
        embedded = await embed_planned(ctx.embedder, plans)
        # Take every lock up front, in a fixed order, so two writes can never deadlock.
        await ctx.store.writes.lock(sorted({p.lock_key for p in prepared}))
        lookups = WriteLookups(ctx, prepared, [e.vector for e in embedded])
        results = [await self._write(lookups, i, now) for i in range(len(prepared))]
        await ctx.store.flush()
        await passages.add(
            [
                (result.memory, planned, e.spans)
                for result, planned, e in zip(results, plans, embedded, strict=True)
                if result.action != "deduplicated" and planned.spans
            ]
        )
        await self._record_accesses()
        await ctx.store.events.record(*self._events)
        self._events = []
        return results

    async def _decide(self, lookups: WriteLookups, index: int) -> Decision:
        p = lookups.prepared[index]
        if p.slot is not None:
            current = await lookups.slot_current(index)
            slot_decision = decide_slot(p.digest, p.observed_at, _existing(current))
            if slot_decision is not None:
                return slot_decision
        duplicate = await lookups.duplicate(index)
        if duplicate is not None:
            return Decision(Action.DEDUPLICATE, duplicate.id)
        thresholds = self.ctx.embedder.thresholds
        near = await lookups.nearest(index)
        nearest, similar = near.nearest, near.similar
        return decide_semantic(
            p.observed_at,
            _existing(nearest[0]) if nearest else None,
            nearest[1] if nearest else None,
            supersede_at=thresholds.supersede,
            review_at=thresholds.review,
            numbers_differ=nearest is not None and numeric_tokens_differ(nearest[0].content, p.content),
            similar=_existing(similar[0]) if similar else None,
            similarity=similar[1] if similar else None,
        )

    async def _write(self, lookups: WriteLookups, index: int, now: datetime) -> RememberResult:
        p = lookups.prepared[index]
        decision = await self._decide(lookups, index)
        if decision.action is Action.DEDUPLICATE:
            assert decision.target is not None
            return await self._reinforce(lookups, decision.target, p, now)
        memory = new_memory(p, lookups.vectors[index], now, self.ctx.embedder.name)
        self.ctx.store.writes.add(memory)
        self._events.append(_created(memory, p, f"{p.item.source} write"))
        superseded: list[uuid.UUID] = []
        proposals: list[uuid.UUID] = []
        old = await lookups.memory(decision.target) if decision.target else None
        if decision.action is Action.SUPERSEDE and old is not None:
            self._supersede(old, memory, decision, now)
            superseded.append(old.id)
        elif decision.action is Action.ARRIVED_STALE and old is not None:
            self._supersede(memory, old, decision, now)
        elif decision.action is Action.PROPOSE and old is not None:
            proposals.append(self._propose(p, old, memory, decision))
        lookups.wrote(index, memory)
        action = "superseded" if superseded else "created"
        return RememberResult(memory, action, superseded, proposals, p.redacted)

    def _propose(self, p: Prepared, old: Memory, new: Memory, decision: Decision) -> uuid.UUID:
        """A `supersede` proposal for a person: the old memory is protected, or the match is uncertain."""
        proposal = self.ctx.store.proposals.add(
            p.scope,
            kind=ProposalKind.SUPERSEDE,
            target_ids=[old.id, new.id],
            payload={
                "superseded": str(old.id),
                "successor": str(new.id),
                "rule": decision.rule,
                "cosine": decision.cosine,
                "similarity": decision.similarity,
                "protected": is_protected(old.status, old.type),
                "fingerprint": fingerprints([old, new]),
            },
            rationale=_proposal_rationale(old, decision),
            model=None,
        )
        return proposal.id

    async def create_without_decision(self, item: RememberInput, reason: str) -> Memory:
        """Insert one memory as is, under its slot lock: an approved dream merge (no supersession rule)."""
        ctx = self.ctx
        check(item, None, ctx.settings.max_content_chars)
        now = ctx.clock.now()
        p = prepare(item, ctx.tenant, now, ctx.settings.temporary_ttl_seconds)
        passages = PassageIndex(ctx)
        vector, planned, passage_vectors = await passages.embed(p.content)
        await ctx.store.writes.lock([p.lock_key])
        memory = new_memory(p, vector, now, ctx.embedder.name)
        ctx.store.writes.add(memory)
        await ctx.store.flush()
        await passages.add([(memory, planned, passage_vectors)])
        await ctx.store.events.record(_created(memory, p, reason))
        return memory

    def _supersede(self, old: Memory, new: Memory, decision: Decision, now: datetime) -> None:
        """Retire `old` in favour of `new` (nothing is deleted; the chain stays navigable)."""
        reason = _supersede_reason(decision)
        self._events.append(
            retire(old, new, rule=str(decision.rule), reason=reason, now=now, cosine=decision.cosine)
        )

    async def _reinforce(
        self, lookups: WriteLookups, target: uuid.UUID, p: Prepared, now: datetime
    ) -> RememberResult:
        memory = await lookups.memory(target)
        assert memory is not None
        seen = self._accessed.get(memory.id)
        self._accessed[memory.id] = (memory, Access(1 if seen is None else seen[1].count + 1, now))
        memory.updated_at = now
        memory.importance = max(memory.importance, p.item.importance)
        details = {"source": p.item.source}
        self._events.append(
            NewEvent.about(memory, EventKind.DEDUPLICATED, "the same content was written again", details)
        )
        return RememberResult(memory, "deduplicated", [], [], p.redacted)

    async def _record_accesses(self) -> None:
        """Count the memories written again as accessed (one statement per write), and show it."""
        accessed, self._accessed = self._accessed, {}
        stored = await self.ctx.store.access.add({mid: access for mid, (_, access) in accessed.items()})
        for memory_id, access in stored.items():
            memory = accessed[memory_id][0]
            set_committed_value(memory, "access_count", access.count)
            set_committed_value(memory, "last_accessed_at", access.last)


def _created(memory: Memory, p: Prepared, reason: str) -> NewEvent:
    details = {"type": p.item.type, "subject": p.subject, "source": p.item.source}
    return NewEvent.about(memory, EventKind.CREATED, reason, details)


def _existing(memory: Memory | None) -> Existing | None:
    if memory is None:
        return None
    return Existing(
        memory.id, memory.content_hash, is_protected(memory.status, memory.type), memory.valid_from
    )


def _supersede_reason(decision: Decision) -> str:
    if decision.cosine is not None:
        return f"{decision.rule}: cosine {decision.cosine:.3f} with a newer memory of the same type"
    return f"{decision.rule}: a newer memory took the same slot"


def _proposal_rationale(old: Memory, decision: Decision) -> str:
    if is_protected(old.status, old.type):
        return "the existing memory is pinned or a critical rule; it is never replaced without approval"
    if decision.cosine is None:
        return (
            f"similarity {decision.similarity or 0.0:.3f} (their words) is in the review band: possibly the "
            "same fact, changed"
        )
    return f"cosine {decision.cosine:.3f} is in the review band: possibly the same fact, changed"
