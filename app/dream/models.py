"""Plain values of the dreaming domain: what a dream knows of a memory, candidates, apply reports."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from app.db.models import DreamProposal, Memory
from app.vocabulary import MemoryStatus, ProposalKind, is_protected


@dataclass(frozen=True, slots=True)
class Known:
    """A live memory as dreaming sees it (the validation and offline rules need nothing else)."""

    id: uuid.UUID
    project_id: str | None
    type: str
    subject: str | None
    content: str
    importance: float
    salience: float
    privacy: str
    pinned: bool
    valid_from: datetime
    last_accessed_at: datetime | None

    @property
    def protected(self) -> bool:
        return is_protected(MemoryStatus.PINNED if self.pinned else MemoryStatus.ACTIVE, self.type)


def known_of(memory: Memory) -> Known:
    values = {f.name: getattr(memory, f.name) for f in fields(Known) if f.name != "pinned"}
    return Known(**values, pinned=memory.status == MemoryStatus.PINNED)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proposal before it is stored: validated, its targets all live memories of the user."""

    kind: ProposalKind
    target_ids: tuple[uuid.UUID, ...]
    payload: dict[str, Any]
    rationale: str

    @property
    def key(self) -> tuple[ProposalKind, frozenset[uuid.UUID]]:
        return self.kind, frozenset(self.target_ids)


@dataclass(frozen=True, slots=True)
class DreamResult:
    proposals: list[DreamProposal]  # the user's open proposals after this pass, newest first
    mode: str  # model | offline | degraded (the model failed; the offline dreamer answered)
    created: int
    dropped: int  # model proposals refused by validation


@dataclass(frozen=True, slots=True)
class ApplyOutcome:
    id: uuid.UUID
    kind: ProposalKind
    status: str  # applied | stale | skipped
    reason: str | None = None
    memory_id: uuid.UUID | None = None  # the merged memory


@dataclass(slots=True)
class ApplyReport:
    applied: int = 0
    merged: int = 0  # merge proposals applied (one new memory each)
    forgotten: int = 0  # memories forgotten
    resalienced: int = 0  # memories whose salience changed
    superseded: int = 0  # memories retired by approved `supersede` proposals
    stale: int = 0
    skipped: int = 0  # not approved (proposed, rejected, applied or stale already)
    results: list[ApplyOutcome] = field(default_factory=list)
