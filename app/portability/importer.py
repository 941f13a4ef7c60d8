"""Import: an export document back into a tenant, all or nothing, in the caller's transaction.

Ids are kept (they are unique per tenant, so an export moves between tenants unchanged) and remapped
consistently only when the tenant already uses one for a different memory. A memory the tenant already
holds (same id and content, or a live one with the same scope, type and content hash) is deduplicated.
Vectors of the configured embed model are kept; a row without a vector is embedded now; a vector of
another model is dropped and the row counted as mismatched until `reembed` heals it. Finally every
slot the import touched keeps one current memory (the newest); the read-time slot veto still guards
the slots where a pinned memory or a critical rule cannot be retired automatically.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.context import RequestContext
from app.db.models import DreamProposal, Memory
from app.embeddings.base import SpanVectors
from app.lib.redaction import redact, redact_value
from app.memory.passage_index import PassageIndex, Planned
from app.memory.retire import retire
from app.memory.slots import content_hash, normalise_subject
from app.portability.document import ExportDocument, ExportedEvent, ExportedMemory, check_document
from app.portability.integrity import imported_details
from app.store.access import Access
from app.store.events import NewEvent
from app.store.portability import PortabilityStore
from app.vocabulary import LIVE_STATUSES, EventKind, SupersedeRule, is_protected

Progress = Callable[[int], object]


@dataclass(slots=True)
class ImportResult:
    imported: int = 0
    deduplicated: int = 0
    superseded: int = 0
    mismatched: int = 0
    remapped: int = 0
    events: int = 0
    proposals: int = 0


@dataclass(slots=True)
class _Row:
    """One memory of the document, redacted and ready to insert."""

    doc: ExportedMemory
    id: uuid.UUID
    content: str
    digest: str
    vector: list[float] | None
    embed_model: str | None
    needs_vector: bool


@dataclass(slots=True)
class _Plan:
    rows: list[_Row] = field(default_factory=list)  # to insert
    ids: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # document id -> stored id
    dropped: set[uuid.UUID] = field(default_factory=set)  # document ids already held by the tenant
    _changed: dict[str, str] | None = None

    def map(self, value: uuid.UUID | None) -> uuid.UUID | None:
        return None if value is None else self.ids.get(value, value)

    def remap_json(self, value: Any) -> Any:
        """Ids inside event details and proposal payloads follow the memories they name."""
        if self._changed is None:  # the plan is complete by the time ids inside JSON are remapped
            self._changed = {str(k): str(v) for k, v in self.ids.items() if k != v}
        return _replace_strings(value, self._changed) if self._changed else value


def _replace_strings(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {k: _replace_strings(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_strings(v, mapping) for v in value]
    return value


def _json(value: dict[str, Any]) -> dict[str, Any]:
    cleaned = redact_value(value)
    return cleaned if isinstance(cleaned, dict) else {}


def _text(value: str | None) -> str | None:
    return None if value is None else redact(value).text


class Importer:
    """Imports one document with the tenant's repository, embedder and settings."""

    def __init__(self, ctx: RequestContext, progress: Progress | None = None) -> None:
        self.ctx = ctx
        self.repo = PortabilityStore(ctx.session, ctx.tenant)
        self.progress = progress or (lambda _n: None)
        self._events: list[NewEvent] = []
        self._embedded: dict[uuid.UUID, tuple[Planned, SpanVectors]] = {}  # long rows embedded here

    async def run(self, doc: ExportDocument) -> ImportResult:
        embedder = self.ctx.embedder
        check_document(
            doc, max_chars=self.ctx.settings.max_content_chars, embed_model=embedder.name, dim=embedder.dim
        )
        result = ImportResult()
        plan = await self._plan([self._prepare(m) for m in doc.memories], result)
        self.progress(len(plan.dropped))
        await self.ctx.ensure_room(len(plan.rows))  # the whole document fits, or nothing is imported
        await self._embed_missing(plan.rows)
        now = self.ctx.clock.now()
        inserted = []
        for row in plan.rows:
            inserted.append(self._insert(row, plan, now))
            self.progress(1)
        result.imported = len(plan.rows)
        result.mismatched = sum(1 for r in plan.rows if r.vector is None)
        await self.ctx.store.flush()
        await self._passages(inserted)
        await self.ctx.store.access.add(
            {
                row.id: Access(row.doc.access_count, row.doc.last_accessed_at)
                for row in plan.rows
                if row.doc.access_count or row.doc.last_accessed_at is not None
            }
        )
        result.superseded = await self._resolve_slots(inserted, now)
        result.events = await self._copy_events(doc, plan)
        result.proposals = await self._proposals(doc, plan)
        await self.ctx.store.flush()
        await self.ctx.store.events.record(*self._events)
        return result

    def _prepare(self, m: ExportedMemory) -> _Row:
        content = redact(m.content)
        current = self.ctx.embedder.name
        if m.embedding is not None and m.embed_model != current:
            return _Row(m, m.id, content.text, content_hash(content.text), None, m.embed_model, False)
        # A vector of the redacted-away text must not survive either: embed the clean text instead.
        keep = m.embedding is not None and not content.changed
        vector = m.embedding if keep else None
        return _Row(m, m.id, content.text, content_hash(content.text), vector, current, not keep)

    async def _plan(self, rows: list[_Row], result: ImportResult) -> _Plan:
        live_digests = [r.digest for r in rows if r.doc.status in LIVE_STATUSES]
        existing = await self.repo.existing([r.doc.id for r in rows], live_digests)
        by_id = {e.id: e for e in existing}
        live = {
            (e.user_id, e.project_id, e.type, e.content_hash): e.id
            for e in existing
            if e.status in LIVE_STATUSES
        }
        plan = _Plan()
        for row in rows:
            m = row.doc
            same = by_id.get(m.id)
            if same is not None and same.user_id == m.user_id and same.content_hash == row.digest:
                plan.ids[m.id] = m.id  # this very memory is already here (an export imported twice)
                plan.dropped.add(m.id)
                result.deduplicated += 1
                continue
            if same is not None:
                row.id = uuid.uuid4()  # the id names another memory of this tenant
            if m.status in LIVE_STATUSES:
                key = (m.user_id, m.project_id, str(m.type), row.digest)
                if key in live:
                    plan.ids[m.id] = live[key]
                    plan.dropped.add(m.id)
                    result.deduplicated += 1
                    continue
                live[key] = row.id
            plan.ids[m.id] = row.id
            plan.rows.append(row)
            result.remapped += row.id != m.id
        return plan

    async def _embed_missing(self, rows: list[_Row]) -> None:
        """Vectors for the rows the document brings none of (another model's, or none), in batches; a
        long memory's passages are embedded in the same call as its content (kept for `_passages`)."""
        pending = [r for r in rows if r.needs_vector]
        index = PassageIndex(self.ctx)
        size = self.ctx.settings.reembed_batch_size
        for start in range(0, len(pending), size):
            batch = pending[start : start + size]
            embedded = await index.embed_many([r.content for r in batch])
            for row, (planned, vectors) in zip(batch, embedded, strict=True):
                row.vector = vectors.vector
                if planned.spans:
                    self._embedded[row.id] = (planned, vectors)

    async def _passages(self, inserted: list[Memory]) -> None:
        """The long memories' passages (an export carries none), embedded in batches like the rows:
        those of rows embedded here already are, and are not embedded again."""
        index = PassageIndex(self.ctx)
        size = self.ctx.settings.reembed_batch_size
        for start in range(0, len(inserted), size):
            await index.rebuild(inserted[start : start + size], new=True, embedded=self._embedded)

    def _insert(self, row: _Row, plan: _Plan, now: datetime) -> Memory:
        m = row.doc
        created = m.created_at or now
        memory = Memory(
            tenant_id=self.ctx.tenant,
            id=row.id,
            user_id=m.user_id,
            project_id=m.project_id,
            session_id=m.session_id,
            agent_id=m.agent_id,
            type=str(m.type),
            subject=normalise_subject(_text(m.subject)),
            content=row.content,
            summary=_text(m.summary),
            status=str(m.status),
            importance=m.importance,
            salience=m.salience,
            confidence=m.confidence,
            privacy=str(m.privacy),
            tags=[redact(t).text for t in m.tags],
            created_at=created,
            updated_at=m.updated_at or created,
            valid_from=m.valid_from or created,
            valid_to=m.valid_to,
            expires_at=m.expires_at,
            supersedes=plan.map(m.supersedes),
            superseded_by=plan.map(m.superseded_by),
            source=str(m.source),
            source_model=m.source_model,
            source_message_id=m.source_message_id,
            embed_model=row.embed_model,
            embedding=row.vector,
            content_hash=row.digest,
        )
        self.ctx.store.writes.add(memory)
        details = {"original_id": str(m.id)} if row.id != m.id else {}
        self._events.append(NewEvent.about(memory, EventKind.IMPORTED, "imported from an export", details))
        return memory

    async def _resolve_slots(self, inserted: list[Memory], now: datetime) -> int:
        """In every slot an imported live memory landed in, the newest live memory supersedes the others."""
        touched = {
            (m.user_id, m.project_id, m.subject, m.type)
            for m in inserted
            if m.subject is not None and m.status in LIVE_STATUSES
        }
        slots: dict[tuple[str, str | None, str | None, str], list[Memory]] = defaultdict(list)
        for memory in await self.repo.live_slotted(sorted({slot[0] for slot in touched})):
            key = (memory.user_id, memory.project_id, memory.subject, memory.type)
            if key in touched:
                slots[key].append(memory)
        retired = 0
        for members in slots.values():
            members.sort(key=lambda x: (x.valid_from, x.created_at), reverse=True)
            winner = members[0]
            for loser in members[1:]:
                if is_protected(loser.status, loser.type):
                    continue  # never retired without approval; the read-time veto decides
                event = retire(
                    loser,
                    winner,
                    rule=SupersedeRule.EXACT_SLOT,
                    reason=f"{SupersedeRule.EXACT_SLOT}: an imported memory holds the same slot",
                    now=now,
                )
                self._events.append(event)
                retired += 1
        return retired

    async def _copy_events(self, doc: ExportDocument, plan: _Plan) -> int:
        in_doc = {m.id for m in doc.memories}
        orphans = [(e.memory_id, str(e.kind), e.created_at) for e in doc.events if e.memory_id not in in_doc]
        stored = await self.repo.existing_event_keys(orphans)
        count = 0
        for e in doc.events:
            if e.memory_id in plan.dropped or (
                e.memory_id not in in_doc and (e.memory_id, str(e.kind), e.created_at) in stored
            ):
                continue  # already held by the tenant
            self._add_event(e, plan)
            count += 1
        return count

    def _add_event(self, e: ExportedEvent, plan: _Plan) -> None:
        self._events.append(
            NewEvent(
                memory_id=plan.map(e.memory_id),
                user_id=e.user_id,
                project_id=e.project_id,
                kind=str(e.kind),
                reason=_text(e.reason),
                details=plan.remap_json(_json(imported_details(e))),
                actor=None,  # the importer; the document's claim is kept in the details, not believed
                at=e.created_at,
            )
        )

    async def _proposals(self, doc: ExportDocument, plan: _Plan) -> int:
        taken = await self.repo.existing_proposal_ids([p.id for p in doc.proposals])
        count = 0
        for p in doc.proposals:
            pid = p.id
            if pid in taken:
                if taken[pid] == p.user_id:
                    continue  # the same proposal, imported before
                pid = uuid.uuid4()
            self.ctx.session.add(
                DreamProposal(
                    tenant_id=self.repo.tenant,
                    id=pid,
                    user_id=p.user_id,
                    project_id=p.project_id,
                    kind=str(p.kind),
                    target_ids=[plan.ids.get(t, t) for t in p.target_ids],
                    payload=plan.remap_json(_json(p.payload)),
                    rationale=_text(p.rationale),
                    status=str(p.status),
                    model=p.model,
                    created_at=p.created_at,
                    decided_at=p.decided_at,
                    applied_at=p.applied_at,
                )
            )
            count += 1
        return count
