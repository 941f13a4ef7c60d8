"""HTTP payloads of dreaming and the timeline (msgspec Structs)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

import msgspec

from app.api.schemas import EventOut, Ident, Strict
from app.db.models import DreamProposal
from app.dream.apply import MAX_IDS
from app.dream.models import ApplyReport
from app.vocabulary import ProposalKind, ProposalStatus


class DreamIn(Strict):
    user_id: Ident
    project_id: Ident | None = None


class ApplyIn(Strict):
    user_id: Ident | None = None
    proposal_ids: Annotated[list[uuid.UUID], msgspec.Meta(min_length=1, max_length=MAX_IDS)] | None = None


class ProposalOut(msgspec.Struct, kw_only=True):
    id: uuid.UUID
    user_id: str
    project_id: str | None
    kind: ProposalKind
    target_ids: list[uuid.UUID]
    payload: dict[str, Any]
    rationale: str | None
    status: ProposalStatus
    model: str | None
    created_at: datetime
    decided_at: datetime | None
    applied_at: datetime | None

    @classmethod
    def of(cls, p: DreamProposal) -> ProposalOut:
        return cls(**{f: getattr(p, f) for f in cls.__struct_fields__})


class DreamOut(msgspec.Struct, kw_only=True):
    proposals: list[ProposalOut]
    mode: str
    created: int
    dropped: int


class ProposalPage(msgspec.Struct, kw_only=True):
    items: list[ProposalOut]
    next_cursor: str | None


class ApplyResultOut(msgspec.Struct, kw_only=True):
    id: uuid.UUID
    kind: ProposalKind
    status: str  # applied, skipped or stale
    reason: str | None
    memory_id: uuid.UUID | None


class ApplyOut(msgspec.Struct, kw_only=True):
    applied: int
    merged: int
    forgotten: int
    resalienced: int
    superseded: int
    stale: int
    skipped: int
    results: list[ApplyResultOut]

    @classmethod
    def of(cls, r: ApplyReport) -> ApplyOut:
        return cls(
            applied=r.applied,
            merged=r.merged,
            forgotten=r.forgotten,
            resalienced=r.resalienced,
            superseded=r.superseded,
            stale=r.stale,
            skipped=r.skipped,
            results=[
                ApplyResultOut(id=o.id, kind=o.kind, status=o.status, reason=o.reason, memory_id=o.memory_id)
                for o in r.results
            ],
        )


class EventPage(msgspec.Struct, kw_only=True):
    items: list[EventOut]
    next_cursor: str | None
