"""The memory service: one object per request, bound to one tenant. Services flush, never commit;
the request's unit of work commits (or rolls back on any error)."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime, timedelta
from typing import Any

from app.db.models import Memory
from app.lib.errors import Conflict, NotFound, ValidationFailed
from app.lib.redaction import redact
from app.lib.validation import check_time
from app.memory.context import MemoryDeps
from app.memory.models import ForgetFilter, History, RecallInput, RecallResult, RememberInput, RememberResult
from app.memory.recall import Recaller
from app.memory.repository import Scope
from app.memory.scoring import decay
from app.memory.slots import content_hash, normalise_subject
from app.memory.writer import MemoryWriter
from app.privacy.erase import Eraser
from app.vocabulary import LIVE_STATUSES, EventKind, MemoryStatus, MemoryType, is_protected

MAX_PAGE = 500
PATCHABLE = ("content", "type", "subject", "importance", "confidence", "privacy", "tags", "expires_at")


def encode_cursor(memory: Memory) -> str:
    raw = f"{memory.created_at.isoformat()}|{memory.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        created, _, mid = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        return datetime.fromisoformat(created), uuid.UUID(mid)
    except ValueError as exc:
        raise ValidationFailed("cursor is not one this service returned") from exc


class MemoryService:
    """Remember, recall, forget and manage the memories of one tenant."""

    def __init__(self, deps: MemoryDeps, actor: str = "api") -> None:
        self.deps = deps
        self.repo = deps.repo
        self.actor = actor

    async def remember(self, item: RememberInput) -> RememberResult:
        [result] = await MemoryWriter(self.deps).remember_many([item], self.actor)
        return result

    async def remember_many(self, items: list[RememberInput]) -> list[RememberResult]:
        return await MemoryWriter(self.deps).remember_many(items, self.actor)

    async def recall(self, request: RecallInput) -> RecallResult:
        return await Recaller(self.deps).recall(request)

    async def get(self, memory_id: uuid.UUID) -> Memory:
        memory = await self.repo.get(memory_id)
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
    ) -> tuple[list[Memory], str | None]:
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationFailed(f"limit must be between 1 and {MAX_PAGE}")
        query = self.repo.list_query(
            user_id,
            project_id=project_id,
            status=status,
            mtype=mtype,
            subject=normalise_subject(subject) if subject else None,
            q=q,
        )
        rows = await self.repo.page(query, after=decode_cursor(cursor) if cursor else None, limit=limit)
        next_cursor = encode_cursor(rows[limit - 1]) if len(rows) > limit else None
        return rows[:limit], next_cursor

    async def patch(self, memory_id: uuid.UUID, changes: dict[str, Any]) -> Memory:
        memory = await self.repo.get(memory_id, for_update=True)
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        unknown = set(changes) - set(PATCHABLE)
        if unknown:
            raise ValidationFailed(f"cannot change {', '.join(sorted(unknown))}")
        self._validate_patch(changes)
        if len(str(changes.get("content") or "")) > self.deps.settings.max_content_chars:
            raise ValidationFailed(
                f"content is longer than {self.deps.settings.max_content_chars} characters"
            )
        now = self.deps.clock.now()
        changed: list[str] = []
        if "content" in changes:
            redacted = redact(changes.pop("content")).text
            if redacted != memory.content:
                memory.content = redacted
                memory.content_hash = content_hash(redacted)
                [memory.embedding] = await self.deps.embedder.embed([redacted])
                memory.embed_model = self.deps.embedder.name
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
            memory.updated_at = now
            self._event(memory, EventKind.UPDATED, "fields changed by the owner", {"fields": sorted(changed)})
        await self.repo.flush()
        return memory

    @staticmethod
    def _validate_patch(changes: dict[str, Any]) -> None:
        for name in ("importance", "confidence"):
            if name in changes and not 0.0 <= float(changes[name]) <= 1.0:
                raise ValidationFailed(f"{name} must be between 0 and 1")
        if "content" in changes and not str(changes["content"] or "").strip():
            raise ValidationFailed("content must not be empty")
        if "expires_at" in changes:
            check_time("expires_at", changes["expires_at"])

    def _event(self, memory: Memory, kind: str, reason: str, details: dict[str, Any] | None = None) -> None:
        self.repo.add_event(
            memory_id=memory.id,
            user_id=memory.user_id,
            project_id=memory.project_id,
            kind=kind,
            actor=self.actor,
            reason=reason,
            details=details,
        )

    async def set_state(self, memory_id: uuid.UUID, target: str) -> Memory:
        """pin, unpin, archive or restore."""
        memory = await self.repo.get(memory_id, for_update=True)
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        now = self.deps.clock.now()
        status = memory.status
        if target == "pin":
            if status not in LIVE_STATUSES:
                raise Conflict(f"only an active memory can be pinned; this one is {status}")
            new_status, kind = MemoryStatus.PINNED, EventKind.PINNED
        elif target == "unpin":
            if status != MemoryStatus.PINNED:
                raise Conflict(f"the memory is not pinned; it is {status}")
            new_status, kind = MemoryStatus.ACTIVE, EventKind.UNPINNED
        elif target == "archive":
            if status not in LIVE_STATUSES:
                raise Conflict(f"only an active memory can be archived; this one is {status}")
            new_status, kind = MemoryStatus.ARCHIVED, EventKind.ARCHIVED
        else:
            await self._check_restorable(memory)
            new_status, kind = MemoryStatus.ACTIVE, EventKind.RESTORED
        if memory.status != new_status:
            if kind == EventKind.RESTORED and status == MemoryStatus.SUPERSEDED:
                memory.valid_to = None  # its successor was forgotten: the fact holds again
            memory.status = new_status
            memory.updated_at = now
            self._event(memory, kind, f"{target} requested by the owner", {"from": status})
        await self.repo.flush()
        return memory

    async def _check_restorable(self, memory: Memory) -> None:
        if memory.status in LIVE_STATUSES:
            raise Conflict("the memory is already active")
        if memory.status == MemoryStatus.SUPERSEDED and memory.superseded_by is not None:
            successor = await self.repo.get(memory.superseded_by)
            if successor is not None and successor.status != MemoryStatus.FORGOTTEN:
                raise Conflict(
                    f"memory was superseded by {successor.id}, which is {successor.status}; "
                    "forget the successor first to restore this one"
                )
        if memory.subject is not None:
            scope = Scope(self.repo.tenant, memory.user_id, memory.project_id)
            current = await self.repo.current_in_slot(scope, memory.subject, memory.type)
            if current is not None and current.id != memory.id:
                raise Conflict(f"slot '{memory.subject}' already has a current memory: {current.id}")
        if memory.expires_at is not None and memory.expires_at <= self.deps.clock.now():
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
    ) -> list[uuid.UUID]:
        """Soft forget: status `forgotten`, excluded everywhere, the audit trail kept."""
        given = sum(x is not None for x in (memory_id, query, subject, filter))
        if given != 1:
            raise ValidationFailed("give exactly one of memory_id, query, subject, filter")
        scope = Scope(self.repo.tenant, user_id, project_id)
        targets: list[Memory]
        if memory_id is not None:
            memory = await self.repo.get(memory_id, for_update=True)
            if memory is None or memory.user_id != user_id:
                raise NotFound(f"memory {memory_id} not found")
            targets = [memory] if memory.status in LIVE_STATUSES else []
        elif query is not None:
            targets = await self._closest(scope, query)
        elif subject is not None:
            slot = normalise_subject(subject)
            if slot is None:
                raise ValidationFailed(f"{subject!r} is too generic to name a slot")
            targets = await self._in_user(scope, subject=slot)
        else:
            assert filter is not None
            targets = await self._filtered(scope, filter)
        now = self.deps.clock.now()
        for memory in targets:
            memory.status = MemoryStatus.FORGOTTEN
            memory.updated_at = now
            self._event(memory, EventKind.FORGOTTEN, reason or "forget requested")
        await self.repo.flush()
        return [m.id for m in targets]

    async def _in_user(self, scope: Scope, subject: str | None = None) -> list[Memory]:
        live = await self.repo.live_for_user(scope.user_id, None)
        return [
            m
            for m in live
            if (scope.project_id is None or m.project_id == scope.project_id)
            and (subject is None or m.subject == subject)
        ]

    async def _closest(self, scope: Scope, query: str) -> list[Memory]:
        if not query.strip():
            raise ValidationFailed("query must not be empty")
        [vector] = await self.deps.embedder.embed([query])
        threshold = self.deps.settings.forget_query_min_cosine or self.deps.embedder.thresholds.review
        best: tuple[Memory, float] | None = None
        for mtype in MemoryType:
            found = await self.repo.nearest_of_type(scope, mtype, vector, self.deps.embedder.name, None)
            if found and found[1] >= threshold and (best is None or found[1] > best[1]):
                best = found
        return [best[0]] if best else []

    async def _filtered(self, scope: Scope, f: ForgetFilter) -> list[Memory]:
        if all(v is None for v in (f.older_than_days, f.salience_below, f.decayed_below, f.type)):
            raise ValidationFailed("filter needs at least one condition")
        now = self.deps.clock.now()
        half_lives = self.deps.settings.half_lives
        out = []
        for m in await self._in_user(scope):
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

    async def erase_one(self, memory_id: uuid.UUID) -> dict[str, Any]:
        """Hard erase of one memory (app.privacy.erase): the row, its source turn, the proposals naming
        it and its event details; returns the receipt."""
        receipt = await Eraser(self.repo.session, self.repo.tenant, self.actor).erase_memory(memory_id)
        return receipt.as_dict()

    async def history(self, memory_id: uuid.UUID) -> History:
        """The slot's chain of versions (newest first) and their events."""
        memory = await self.get(memory_id)
        chain = [memory]
        seen = {memory.id}
        cursor = memory
        while cursor.supersedes is not None and cursor.supersedes not in seen:
            older = await self.repo.get(cursor.supersedes)
            if older is None:
                break
            chain.append(older)
            seen.add(older.id)
            cursor = older
        cursor = memory
        while cursor.superseded_by is not None and cursor.superseded_by not in seen:
            newer = await self.repo.get(cursor.superseded_by)
            if newer is None:
                break
            chain.insert(0, newer)
            seen.add(newer.id)
            cursor = newer
        events = await self.repo.events_for([m.id for m in chain])
        return History(events=list(events), versions=chain)

    async def stats(self, user_id: str | None) -> dict[str, Any]:
        stats = await self.repo.stats(user_id, self.deps.embedder.name)
        stats["embed_model"] = self.deps.embedder.name
        return stats
