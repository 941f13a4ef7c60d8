"""The write path (DESIGN.md): validate, redact, normalise the slot, embed in one batch, then decide
and write each memory under an advisory lock so concurrent writes to one slot serialise."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm.attributes import set_committed_value

from app.db.models import Memory
from app.embeddings.base import numeric_tokens_differ
from app.lib.errors import ValidationFailed
from app.lib.redaction import redact
from app.lib.validation import check_time
from app.memory.context import MemoryDeps
from app.memory.deadlines import deadline_expiry
from app.memory.fingerprint import fingerprints
from app.memory.inferred import infer_slots
from app.memory.models import RememberInput, RememberResult
from app.memory.repository import Access, Scope
from app.memory.retire import retire
from app.memory.slots import content_hash, hash_lock_key, normalise_subject, slot_lock_key
from app.memory.supersession import Action, Decision, Existing, decide_semantic, decide_slot
from app.vocabulary import (
    LIVE_STATUSES,
    EventKind,
    MemoryStatus,
    MemoryType,
    ProposalKind,
    Source,
    is_protected,
)


@dataclass(slots=True)
class _Prepared:
    item: RememberInput
    content: str
    summary: str | None
    subject: str | None
    digest: str
    redacted: bool
    observed_at: datetime
    expires_at: datetime | None
    lock_key: str


@dataclass(slots=True)
class _ScopeView:
    """What a batch knows about one scope without asking again: rows fetched up front, and its own writes.

    Every answer equals what the per-item queries would return at that point of the batch; when the view
    cannot be sure (a fetched row was retired by an earlier item), the writer flushes and asks the
    database instead.
    """

    hashes: dict[str, list[Memory]] = field(default_factory=dict)  # digest -> live rows at batch start
    slots: dict[tuple[str, str], Memory] = field(default_factory=dict)  # newest live row per slot at start
    nearest: dict[int, tuple[Memory, float] | None] | None = None  # item -> nearest at batch start
    written: list[tuple[Memory, npt.NDArray[np.float64]]] = field(default_factory=list)  # unit vectors


def _live(memory: Memory) -> bool:
    return memory.status in LIVE_STATUSES


def _unit(vector: list[float]) -> npt.NDArray[np.float64]:
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


def _check(item: RememberInput, index: int | None, max_chars: int) -> None:
    where = "" if index is None else f"items[{index}]."
    if not item.user_id.strip():
        raise ValidationFailed(f"{where}user_id must not be empty")
    if not item.content.strip():
        raise ValidationFailed(f"{where}content must not be empty")
    if len(item.content) > max_chars:
        raise ValidationFailed(f"{where}content is longer than {max_chars} characters")
    for name in ("importance", "confidence"):
        if not 0.0 <= getattr(item, name) <= 1.0:
            raise ValidationFailed(f"{where}{name} must be between 0 and 1")
    for name in ("user_id", "content", "subject", "project_id", "session_id", "summary"):
        if "\x00" in (getattr(item, name) or ""):
            raise ValidationFailed(f"{where}{name} must not contain NUL bytes")
    for name in ("observed_at", "expires_at"):
        check_time(f"{where}{name}", getattr(item, name))
    if item.ttl_seconds is not None and item.ttl_seconds <= 0:
        raise ValidationFailed(f"{where}ttl_seconds must be positive")
    if item.ttl_seconds is not None and item.expires_at is not None:
        raise ValidationFailed(f"{where}give expires_at or ttl_seconds, not both")


def _expiry(item: RememberInput, now: datetime, temporary_ttl: int) -> datetime | None:
    if item.expires_at is not None:
        return item.expires_at
    if item.ttl_seconds is not None:
        return now + timedelta(seconds=item.ttl_seconds)
    if item.type == MemoryType.TEMPORARY:
        return now + timedelta(seconds=temporary_ttl)
    if item.type == MemoryType.DEADLINE:
        return deadline_expiry(item.content, item.observed_at or now)
    return None


class MemoryWriter:
    """Remembers one memory or a batch (one embedding call per batch)."""

    def __init__(self, deps: MemoryDeps) -> None:
        self.deps = deps
        self.repo = deps.repo
        self._scope_sizes: dict[Scope, bool] = {}
        self._views: dict[Scope, _ScopeView] | None = None  # set while a batch is being written
        self._loaded: dict[uuid.UUID, Memory] = {}
        self._accessed: dict[uuid.UUID, tuple[Memory, Access]] = {}  # written again: an access

    async def _large(self, scope: Scope) -> bool:
        """Whether the nearest-memory check uses HNSW for this scope (asked once per scope and batch)."""
        if scope not in self._scope_sizes:
            settings = self.deps.settings
            self._scope_sizes[scope], _ = await self.deps.scope_sizes.plan(
                self.repo,
                scope,
                self.deps.clock.now(),
                settings.write_exact_scan_max_rows,
                settings.hnsw_min_share,
            )
        return self._scope_sizes[scope]

    def _prepare(self, item: RememberInput, now: datetime) -> _Prepared:
        content = redact(item.content)
        summary = redact(item.summary) if item.summary else None
        subject = normalise_subject(redact(item.subject).text if item.subject else None)
        digest = content_hash(content.text)
        tenant = str(self.repo.tenant)
        lock_key = (
            slot_lock_key(tenant, item.user_id, item.project_id, subject, item.type)
            if subject is not None
            else hash_lock_key(tenant, item.user_id, item.project_id, digest)
        )
        return _Prepared(
            item=item,
            content=content.text,
            summary=summary.text if summary else None,
            subject=subject,
            digest=digest,
            redacted=content.changed or bool(summary and summary.changed),
            observed_at=item.observed_at or now,
            expires_at=_expiry(item, now, self.deps.settings.temporary_ttl_seconds),
            lock_key=lock_key,
        )

    async def remember_many(self, items: list[RememberInput], actor: str) -> list[RememberResult]:
        """Validate everything first (a bad item writes nothing), then write in order."""
        max_chars = self.deps.settings.max_content_chars
        for index, item in enumerate(items):
            _check(item, index if len(items) > 1 else None, max_chars)
        now = self.deps.clock.now()
        lapse = timedelta(seconds=self.deps.settings.temporary_ttl_seconds)
        # Before the locks are taken: an inferred slot is locked like a given one.
        items = await infer_slots(self.repo, items, now, lapse)
        prepared = [self._prepare(item, now) for item in items]
        vectors = await self.deps.embedder.embed([p.content for p in prepared])
        # Take every lock up front, in a fixed order, so two batches can never deadlock.
        await self.repo.lock_many(sorted({p.lock_key for p in prepared}))
        if len(prepared) > 1:
            await self._prefetch(prepared, vectors)
        try:
            results = [
                await self._write(p, vector, now, actor, index)
                for index, (p, vector) in enumerate(zip(prepared, vectors, strict=True))
            ]
        finally:
            self._views, self._loaded = None, {}
        await self.repo.flush()
        await self._record_accesses()
        return results

    async def _record_accesses(self) -> None:
        """Count the memories written again as accessed (one statement per batch), and show it."""
        accessed, self._accessed = self._accessed, {}
        stored = await self.repo.record_access({mid: access for mid, (_, access) in accessed.items()})
        for memory_id, access in stored.items():
            memory = accessed[memory_id][0]
            set_committed_value(memory, "access_count", access.count)
            set_committed_value(memory, "last_accessed_at", access.last)

    async def _prefetch(self, prepared: list[_Prepared], vectors: list[list[float]]) -> None:
        """One statement per lookup and scope for the whole batch, instead of three per item."""
        by_scope: dict[Scope, list[int]] = {}
        for index, p in enumerate(prepared):
            by_scope.setdefault(Scope(self.repo.tenant, p.item.user_id, p.item.project_id), []).append(index)
        self._views = {}
        for scope, indexes in by_scope.items():
            view = _ScopeView()
            for memory in await self.repo.live_with_hashes(
                scope, sorted({prepared[i].digest for i in indexes})
            ):
                view.hashes.setdefault(memory.content_hash, []).append(memory)
                self._loaded[memory.id] = memory
            slots = sorted({(p.subject, p.item.type) for p in (prepared[i] for i in indexes) if p.subject})
            if slots:
                for memory in await self.repo.slot_currents(scope, slots):
                    assert memory.subject is not None
                    view.slots[(memory.subject, memory.type)] = memory
                    self._loaded[memory.id] = memory
            queries = [(prepared[i].item.type, prepared[i].subject, vectors[i]) for i in indexes]
            large = await self._large(scope)
            found = await self.repo.nearest_many(
                scope,
                queries,
                self.deps.embedder.name,
                index_dim=self.deps.embedder.dim if large else None,
                ef_search=self.deps.settings.hnsw_ef_search,
            )
            view.nearest = dict(zip(indexes, found, strict=True))
            for hit in found:
                if hit is not None:
                    self._loaded[hit[0].id] = hit[0]
            self._views[scope] = view

    async def _memory(self, memory_id: uuid.UUID) -> Memory | None:
        return self._loaded.get(memory_id) or await self.repo.get(memory_id)

    async def _slot_current(self, p: _Prepared, scope: Scope, view: _ScopeView | None) -> Memory | None:
        assert p.subject is not None
        if view is not None:
            fetched = view.slots.get((p.subject, p.item.type))
            if fetched is None or _live(fetched):
                mine = [
                    m
                    for m, _ in view.written
                    if _live(m) and m.subject == p.subject and m.type == p.item.type
                ]
                candidates = [m for m in (fetched, *mine) if m is not None]
                return max(candidates, key=lambda m: m.valid_from) if candidates else None
            await self.repo.flush()  # the fetched row was retired in this batch: ask the database
        return await self.repo.current_in_slot(scope, p.subject, p.item.type)

    async def _duplicate(self, p: _Prepared, scope: Scope, view: _ScopeView | None) -> Memory | None:
        if view is None:
            found = await self.repo.live_by_hash(scope, p.digest)
            return found if found is not None and found.type == p.item.type else None
        rows = [*view.hashes.get(p.digest, []), *(m for m, _ in view.written if m.content_hash == p.digest)]
        return next((m for m in rows if _live(m) and m.type == p.item.type), None)

    async def _nearest(
        self, p: _Prepared, scope: Scope, vector: list[float], view: _ScopeView | None, index: int
    ) -> tuple[Memory, float] | None:
        if view is not None and view.nearest is not None:
            fetched = view.nearest[index]
            if fetched is None or _live(fetched[0]):
                mine = [
                    (memory, unit)
                    for memory, unit in view.written
                    if _live(memory)
                    and memory.type == p.item.type
                    and (p.subject is None or memory.subject in (None, p.subject))
                ]
                if not mine:
                    return fetched
                cosines = np.stack([unit for _, unit in mine]) @ _unit(vector)
                at = int(np.argmax(cosines))
                if fetched is None or float(cosines[at]) > fetched[1]:
                    return mine[at][0], float(cosines[at])
                return fetched
            await self.repo.flush()  # the fetched row was retired in this batch: ask the database
        index_dim = self.deps.embedder.dim if await self._large(scope) else None
        return await self.repo.nearest_of_type(
            scope,
            p.item.type,
            vector,
            self.deps.embedder.name,
            p.subject,
            index_dim=index_dim,
            ef_search=self.deps.settings.hnsw_ef_search,
        )

    async def _decide(self, p: _Prepared, scope: Scope, vector: list[float], index: int) -> Decision:
        view = self._views.get(scope) if self._views is not None else None
        if p.subject is not None:
            current = await self._slot_current(p, scope, view)
            slot_decision = decide_slot(p.digest, p.observed_at, _existing(current))
            if slot_decision is not None:
                return slot_decision
        duplicate = await self._duplicate(p, scope, view)
        if duplicate is not None:
            return Decision(Action.DEDUPLICATE, duplicate.id)
        thresholds = self.deps.embedder.thresholds
        nearest = await self._nearest(p, scope, vector, view, index)
        return decide_semantic(
            p.observed_at,
            _existing(nearest[0]) if nearest else None,
            nearest[1] if nearest else None,
            supersede_at=thresholds.supersede,
            review_at=thresholds.review,
            numbers_differ=nearest is not None and numeric_tokens_differ(nearest[0].content, p.content),
        )

    async def _write(
        self, p: _Prepared, vector: list[float], now: datetime, actor: str, index: int
    ) -> RememberResult:
        item = p.item
        scope = Scope(self.repo.tenant, item.user_id, item.project_id)
        decision = await self._decide(p, scope, vector, index)
        if decision.action is Action.DEDUPLICATE:
            assert decision.target is not None
            return await self._reinforce(decision.target, p, now, actor)
        memory = self._new_memory(p, vector, now)
        self.repo.add(memory)
        self.repo.add_event(
            memory_id=memory.id,
            user_id=item.user_id,
            project_id=item.project_id,
            kind=EventKind.CREATED,
            actor=actor,
            reason=f"{item.source} write",
            details={"type": item.type, "subject": p.subject, "source": item.source},
        )
        superseded: list[uuid.UUID] = []
        proposals: list[uuid.UUID] = []
        old = await self._memory(decision.target) if decision.target else None
        if decision.action is Action.SUPERSEDE and old is not None:
            self._supersede(old, memory, decision, now, actor)
            superseded.append(old.id)
        elif decision.action is Action.ARRIVED_STALE and old is not None:
            self._supersede(memory, old, decision, now, actor)
        elif decision.action is Action.PROPOSE and old is not None:
            proposal = self.repo.add_proposal(
                scope=scope,
                kind=ProposalKind.SUPERSEDE,
                target_ids=[old.id, memory.id],
                payload={
                    "superseded": str(old.id),
                    "successor": str(memory.id),
                    "rule": decision.rule,
                    "cosine": decision.cosine,
                    "protected": is_protected(old.status, old.type),
                    "fingerprint": fingerprints([old, memory]),
                },
                rationale=_proposal_rationale(old, decision),
                model=None,
            )
            proposals.append(proposal.id)
        view = self._views.get(scope) if self._views is not None else None
        if view is None:
            await self.repo.flush()
        else:  # the batch flushes once at its end; later items see this memory through the view
            view.written.append((memory, _unit(vector)))
            self._loaded[memory.id] = memory
        action = "superseded" if superseded else "created"
        return RememberResult(memory, action, superseded, proposals, p.redacted)

    async def create_without_decision(self, item: RememberInput, actor: str, reason: str) -> Memory:
        """Insert one memory as is, under its slot lock: an approved dream merge (no supersession rule)."""
        _check(item, None, self.deps.settings.max_content_chars)
        now = self.deps.clock.now()
        p = self._prepare(item, now)
        [vector] = await self.deps.embedder.embed([p.content])
        await self.repo.lock(p.lock_key)
        memory = self._new_memory(p, vector, now)
        self.repo.add(memory)
        details = {"type": item.type, "subject": p.subject, "source": item.source}
        self.repo.add_event(
            memory_id=memory.id,
            user_id=item.user_id,
            project_id=item.project_id,
            kind=EventKind.CREATED,
            actor=actor,
            reason=reason,
            details=details,
        )
        await self.repo.flush()
        return memory

    def _new_memory(self, p: _Prepared, vector: list[float], now: datetime) -> Memory:
        item = p.item
        return Memory(
            tenant_id=self.repo.tenant,
            id=uuid.uuid4(),
            user_id=item.user_id,
            project_id=item.project_id,
            session_id=item.session_id,
            type=item.type,
            subject=p.subject,
            content=p.content,
            summary=p.summary,
            status=MemoryStatus.PINNED if item.pinned else MemoryStatus.ACTIVE,
            importance=item.importance,
            salience=1.0,
            confidence=item.confidence,
            privacy=item.privacy,
            tags=[redact(t).text for t in item.tags],
            created_at=now,
            updated_at=now,
            valid_from=p.observed_at,
            expires_at=p.expires_at,
            access_count=0,
            source=item.source,
            source_model=item.source_model,
            source_message_id=item.source_message_id,
            embed_model=self.deps.embedder.name,
            embedding=vector,
            content_hash=p.digest,
        )

    def _supersede(self, old: Memory, new: Memory, decision: Decision, now: datetime, actor: str) -> None:
        """Retire `old` in favour of `new` (nothing is deleted; the chain stays navigable)."""
        retire(
            self.repo,
            old,
            new,
            rule=str(decision.rule),
            reason=_supersede_reason(decision),
            actor=actor,
            now=now,
            cosine=decision.cosine,
        )

    async def _reinforce(self, target: uuid.UUID, p: _Prepared, now: datetime, actor: str) -> RememberResult:
        memory = await self._memory(target)
        assert memory is not None
        seen = self._accessed.get(memory.id)
        self._accessed[memory.id] = (memory, Access(1 if seen is None else seen[1].count + 1, now))
        memory.updated_at = now
        memory.importance = max(memory.importance, p.item.importance)
        self.repo.add_event(
            memory_id=memory.id,
            user_id=memory.user_id,
            project_id=memory.project_id,
            kind=EventKind.DEDUPLICATED,
            actor=actor,
            reason="the same content was written again",
            details={"source": p.item.source},
        )
        if self._views is None:
            await self.repo.flush()
        return RememberResult(memory, "deduplicated", [], [], p.redacted)


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
    return f"cosine {decision.cosine:.3f} is in the review band: possibly the same fact, changed"


__all__ = ["MemoryWriter", "Source"]
