"""The memory service: one object per request, bound to its context. Services flush, never commit;
the request's unit of work commits (or rolls back on any error)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from app.context import RequestContext
from app.db.models import Memory
from app.lib.errors import Conflict, NotFound, ValidationFailed
from app.lib.redaction import redact
from app.lib.validation import check_time
from app.memory.models import ForgetFilter, History, RecallInput, RecallResult, RememberInput, RememberResult
from app.memory.passage_index import PassageIndex, Planned
from app.memory.recall import Recaller
from app.memory.scoring import decay
from app.memory.similarity import forget_floor
from app.memory.slots import content_hash, normalise_subject
from app.memory.writer import MemoryWriter
from app.store.candidates import CandidateRow
from app.store.events import NewEvent
from app.store.pages import Keyset, Page
from app.vocabulary import (
    LIVE_STATUSES,
    AsOfKind,
    EventKind,
    MemoryStatus,
    MemoryType,
    Moment,
    Scope,
    is_protected,
)

PATCHABLE = ("content", "type", "subject", "importance", "confidence", "privacy", "tags", "expires_at")
# pin, unpin, archive: (the statuses it applies to, the new status, its event)
_STATES = {
    "pin": (LIVE_STATUSES, MemoryStatus.PINNED, EventKind.PINNED),
    "unpin": ((MemoryStatus.PINNED,), MemoryStatus.ACTIVE, EventKind.UNPINNED),
    "archive": (LIVE_STATUSES, MemoryStatus.ARCHIVED, EventKind.ARCHIVED),
}


class MemoryService:
    """Remember, recall, forget and manage the memories of one tenant."""

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx

    async def remember(self, item: RememberInput) -> RememberResult:
        [result] = await MemoryWriter(self.ctx).remember_many([item])
        return result

    async def remember_many(self, items: list[RememberInput]) -> list[RememberResult]:
        return await MemoryWriter(self.ctx).remember_many(items)

    async def recall(self, request: RecallInput) -> RecallResult:
        return await Recaller(self.ctx).recall(request)

    async def get(self, memory_id: uuid.UUID, *, for_update: bool = False) -> Memory:
        memory = await self.ctx.store.reads.get(memory_id, for_update=for_update)
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        return memory

    async def list_memories(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        status: MemoryStatus | None = None,
        mtype: MemoryType | None = None,
        subject: str | None = None,
        q: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        as_of: datetime | None = None,
        as_of_kind: AsOfKind = AsOfKind.VALID,
        agent_id: str | None = None,
    ) -> Page[Memory]:
        """One page of a user's memories; with `as_of`, of those current at that instant; `agent_id`:
        what that agent reads (its own, the user's agent-less, its granted spaces')."""
        keyset = Keyset.parse(cursor, limit, uuid.UUID)
        at = self._instant(as_of, as_of_kind)
        scope = Scope.of_user(self.ctx.tenant, user_id, project_id)
        if agent_id is not None:
            scope = replace(scope, agent_id=agent_id, shared=True)
        return await self.ctx.store.reads.page(
            scope,
            keyset,
            status=status,
            mtype=mtype,
            subject=normalise_subject(subject) if subject else None,
            words=q,
            at=at,
        )

    def _instant(self, as_of: datetime | None, kind: AsOfKind) -> Moment | None:
        """The instant a read asks about; None: now (none given, or one in the future)."""
        check_time("as_of", as_of)
        if as_of is None or as_of >= self.ctx.clock.now():
            return None
        return Moment(as_of, kind)

    async def patch(self, memory_id: uuid.UUID, changes: dict[str, Any]) -> Memory:
        ctx = self.ctx
        memory = await self.get(memory_id, for_update=True)
        unknown = set(changes) - set(PATCHABLE)
        if unknown:
            raise ValidationFailed(f"cannot change {', '.join(sorted(unknown))}")
        _validate_patch(changes, ctx.settings.max_content_chars)
        changed: list[str] = []
        passages = PassageIndex(ctx)
        written: list[tuple[Memory, Planned, list[list[float]]]] = []
        if "content" in changes:
            redacted = redact(changes.pop("content")).text
            if redacted != memory.content:
                vector, planned, passage_vectors = await passages.embed(redacted)
                memory.content = redacted
                memory.content_hash = content_hash(redacted)
                memory.embedding, memory.embed_model = vector, ctx.embedder.name
                written.append((memory, planned, passage_vectors))
                changed.append("content")
        if "subject" in changes:
            raw = changes.pop("subject")
            changes["subject"] = normalise_subject(redact(raw).text if raw else None)
        if "tags" in changes:
            changes["tags"] = [redact(t).text for t in changes["tags"] or []]
        for name, value in changes.items():
            if getattr(memory, name) != value:
                setattr(memory, name, value)
                changed.append(name)
        if changed:
            memory.updated_at = ctx.clock.now()
            await ctx.store.events.record(
                NewEvent.about(
                    memory, EventKind.UPDATED, "fields changed by the owner", {"fields": sorted(changed)}
                )
            )
        await ctx.store.flush()
        if written:  # the passages are remade from the flushed row (its content and subject)
            await passages.store.delete([memory.id])
            await passages.add(written)
        elif "subject" in changed:
            await passages.retext([memory.id])
        return memory

    async def set_state(self, memory_id: uuid.UUID, target: str) -> Memory:
        """pin, unpin, archive or restore."""
        memory = await self.get(memory_id, for_update=True)
        status = memory.status
        if target == "restore":
            await self._check_restorable(memory)
            new_status, kind = MemoryStatus.ACTIVE, EventKind.RESTORED
        else:
            allowed, new_status, kind = _STATES[target]
            if status not in allowed:
                raise Conflict(_refusal(target, status))
        if status != new_status:
            if kind == EventKind.RESTORED and status == MemoryStatus.SUPERSEDED:
                memory.valid_to = None  # its successor was forgotten: the fact holds again
            memory.status = new_status
            memory.updated_at = self.ctx.clock.now()
            reason = f"{target} requested by the owner"
            await self.ctx.store.events.record(NewEvent.about(memory, kind, reason, {"from": status}))
        await self.ctx.store.flush()
        return memory

    async def _check_restorable(self, memory: Memory) -> None:
        reads = self.ctx.store.reads
        if memory.status in LIVE_STATUSES:
            raise Conflict("the memory is already active")
        if memory.status == MemoryStatus.SUPERSEDED and memory.superseded_by is not None:
            successor = await reads.get(memory.superseded_by)
            if successor is not None and successor.status != MemoryStatus.FORGOTTEN:
                raise Conflict(
                    f"memory was superseded by {successor.id}, which is {successor.status}; "
                    "forget the successor first to restore this one"
                )
        if memory.subject is not None:
            scope = Scope(
                self.ctx.tenant,
                memory.user_id,
                memory.project_id,
                agent_id=memory.agent_id,
                own=True,
                space=memory.space,
            )
            current = await self.ctx.store.writes.slot_currents(scope, [(memory.subject, memory.type)])
            if current and current[0].id != memory.id:
                raise Conflict(f"slot '{memory.subject}' already has a current memory: {current[0].id}")
        if memory.expires_at is not None and memory.expires_at <= self.ctx.clock.now():
            raise Conflict("the memory has expired; change expires_at before restoring it")

    async def forget(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        memory_id: uuid.UUID | None = None,
        query: str | None = None,
        subject: str | None = None,
        filter: ForgetFilter | None = None,
        reason: str | None = None,
        agent_id: str | None = None,
    ) -> list[uuid.UUID]:
        """Soft forget: status `forgotten`, excluded everywhere, the audit trail kept. `agent_id`: only
        what that agent may change (its own memories and the user's agent-less ones)."""
        given = sum(x is not None for x in (memory_id, query, subject, filter))
        if given != 1:
            raise ValidationFailed("give exactly one of memory_id, query, subject, filter")
        targets: list[Memory]
        if memory_id is not None:
            memory = await self.ctx.store.reads.get(memory_id, for_update=True)
            hidden = agent_id is not None and memory is not None and memory.agent_id not in (None, agent_id)
            if memory is None or memory.user_id != user_id or hidden:
                raise NotFound(f"memory {memory_id} not found")
            targets = [memory] if memory.status in LIVE_STATUSES else []
        elif query is not None:
            targets = await self._closest(user_id, project_id, query, agent_id)
        elif subject is not None:
            slot = normalise_subject(subject)
            if slot is None:
                raise ValidationFailed(f"{subject!r} is too generic to name a slot")
            targets = await self.ctx.store.reads.live(
                Scope.of_user(self.ctx.tenant, user_id, project_id), subject=slot
            )
        else:
            assert filter is not None
            targets = await self._filtered(Scope.of_user(self.ctx.tenant, user_id, project_id), filter)
        if agent_id is not None:
            targets = [m for m in targets if m.agent_id in (None, agent_id)]
        now = self.ctx.clock.now()
        for memory in targets:
            memory.status = MemoryStatus.FORGOTTEN
            memory.updated_at = now
        await self.ctx.store.flush()
        why = reason or "forget requested"
        await self.ctx.store.events.record(*(NewEvent.about(m, EventKind.FORGOTTEN, why) for m in targets))
        return [m.id for m in targets]

    async def _closest(
        self, user_id: str, project_id: str | None, query: str, agent_id: str | None
    ) -> list[Memory]:
        """The memory recall ranks first for `query` among the user's own that recall returns (its floor)
        and that are about the description: their similarity (app.memory.similarity) reaches the forget
        floor, or their text holds a word of it. None when none is.

        The word rule is what a small scope needs: there BM25's idf is near zero (a word in the only
        memory is in every memory), so "my fresco hobby" against "I paint frescoes on weekends" has no
        keyword evidence to speak of, and a short description's cosine with a longer memory sits below
        the forget floor, yet the description names it."""
        if not query.strip():
            raise ValidationFailed("query must not be empty")
        ctx = self.ctx
        floor = ctx.settings.forget_query_min_similarity
        if floor is None:
            floor = forget_floor(ctx.relevance_floor(), ctx.embedder.thresholds.review)
        request = RecallInput(user_id=user_id, query=query, project_id=project_id, agent_id=agent_id)

        def forgettable(row: CandidateRow, relevance: float) -> bool:
            # The user's own (a shared space's memories are not theirs to forget by a description), and
            # with an agent, only what that agent may change.
            owner, agent = row.columns["user_id"], row.columns["agent_id"]
            mine = owner == user_id and (agent_id is None or agent in (None, agent_id))
            return mine and (relevance >= floor or row.keyword_rank > 0)

        # Exact statistics: a forget is rare, and its count must not become the scope's remembered one.
        recaller = Recaller(ctx, remembered_stats=False)
        first = await recaller.first(request, ctx.relevance_floor(), forgettable)
        if first is None:
            return []
        memory = await ctx.store.reads.get(first.id, for_update=True)
        return [memory] if memory is not None and memory.status in LIVE_STATUSES else []

    async def _filtered(self, scope: Scope, f: ForgetFilter) -> list[Memory]:
        if all(v is None for v in (f.older_than_days, f.salience_below, f.decayed_below, f.type)):
            raise ValidationFailed("filter needs at least one condition")
        now = self.ctx.clock.now()
        half_lives = self.ctx.policy.half_lives
        out = []
        for m in await self.ctx.store.reads.live(scope):
            if is_protected(m.status, m.type):
                continue  # protected from bulk forgetting; forget them by id
            if f.type is not None and m.type != f.type:
                continue
            if f.older_than_days is not None and m.valid_from > now - timedelta(days=f.older_than_days):
                continue
            if f.salience_below is not None and m.salience >= f.salience_below:
                continue
            if f.decayed_below is not None:
                age = (now - (m.last_accessed_at or m.valid_from)).total_seconds() / 86400
                if decay(m.salience, age, half_lives.get(m.type)) >= f.decayed_below:
                    continue
            out.append(m)
        return out

    async def history(
        self, memory_id: uuid.UUID, *, as_of: datetime | None = None, as_of_kind: AsOfKind = AsOfKind.VALID
    ) -> History:
        """The slot's chain of versions (newest first) and their events. With `as_of`: the versions
        begun by then (valid time: observed; recorded time: written), the events recorded by then, and
        which versions were current then."""
        at = self._instant(as_of, as_of_kind)
        memory = await self.get(memory_id)
        chain = [memory]
        seen = {memory.id}
        for link, at_end in (("supersedes", True), ("superseded_by", False)):
            cursor = memory
            while (next_id := getattr(cursor, link)) is not None and next_id not in seen:
                linked = await self.ctx.store.reads.get(next_id)
                if linked is None:
                    break
                chain.insert(len(chain) if at_end else 0, linked)
                seen.add(linked.id)
                cursor = linked
        if at is None:
            return History(await self.ctx.store.events.of_memories([m.id for m in chain]), chain)
        assert at.as_of is not None
        begun = [
            m for m in chain if (m.valid_from if at.kind is AsOfKind.VALID else m.created_at) <= at.as_of
        ]
        ids = [m.id for m in chain]
        current = set(await self.ctx.store.reads.current_among(ids, at))
        events = await self.ctx.store.events.of_memories(ids, upto=at.as_of)
        return History(events, begun, [m.id for m in chain if m.id in current])

    async def stats(self, user_id: str | None) -> dict[str, Any]:
        stats = await self.ctx.store.reads.stats(user_id, self.ctx.embedder.name)
        stats["embed_model"] = self.ctx.embedder.name
        return stats


def _validate_patch(changes: dict[str, Any], max_chars: int) -> None:
    for name in ("importance", "confidence"):
        if name in changes and not 0.0 <= float(changes[name]) <= 1.0:
            raise ValidationFailed(f"{name} must be between 0 and 1")
    if "content" in changes:
        if not str(changes["content"] or "").strip():
            raise ValidationFailed("content must not be empty")
        if len(str(changes["content"])) > max_chars:
            raise ValidationFailed(f"content is longer than {max_chars} characters")
    if "expires_at" in changes:
        check_time("expires_at", changes["expires_at"])


def _refusal(target: str, status: MemoryStatus) -> str:
    if target == "unpin":
        return f"the memory is not pinned; it is {status}"
    verb = "pinned" if target == "pin" else "archived"
    return f"only an active memory can be {verb}; this one is {status}"
