"""Inputs and results of the memory service (plain dataclasses; the API maps them to JSON)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from app.db.models import Memory, MemoryEvent
from app.store.records import MemoryRecord
from app.vocabulary import PRESENT, AsOfKind, MemoryType, Moment, Privacy, Source


@dataclass(slots=True)
class RememberInput:
    user_id: str
    content: str
    type: MemoryType = MemoryType.FACT
    subject: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    importance: float = 0.5
    confidence: float = 0.8
    privacy: Privacy = Privacy.PUBLIC
    tags: list[str] = field(default_factory=list)
    expires_at: datetime | None = None
    ttl_seconds: int | None = None
    pinned: bool = False
    observed_at: datetime | None = None
    summary: str | None = None
    source: Source = Source.API
    source_model: str | None = None
    source_message_id: uuid.UUID | None = None
    agent_id: str | None = None  # private to this agent; None: the user's, seen by all their agents
    space: str | None = None  # a shared space's memory (only promotion writes one; user_id is '')


@dataclass(frozen=True, slots=True)
class RememberResult:
    memory: Memory
    action: str  # created | deduplicated | superseded
    superseded: list[uuid.UUID]
    proposals: list[uuid.UUID]
    redacted: bool


@dataclass(slots=True)
class RecallInput:
    user_id: str
    query: str
    project_id: str | None = None
    token_budget: int | None = None
    types: list[MemoryType] | None = None
    prefer_type: MemoryType | None = None
    min_relevance: float | None = None
    include_sensitive: bool = False
    explain: bool = True
    as_of: datetime | None = None  # what was current at this instant (a future one is now)
    as_of_kind: AsOfKind = AsOfKind.VALID
    agent_id: str | None = None  # the agent's own, the user's agent-less and its granted spaces' memories


@dataclass(frozen=True, slots=True)
class PassageShown:
    """The passage of a long memory that its context line shows instead of the whole content: its index
    among the memory's passages and its characters [start, end) of the content."""

    index: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    memory: MemoryRecord
    score: float
    relevance: float
    components: dict[str, float]
    tokens: int
    passage: PassageShown | None = None  # None: the line shows the whole memory


@dataclass(frozen=True, slots=True)
class SkippedMemory:
    id: uuid.UUID
    reason: str
    score: float
    relevance: float
    components: dict[str, float]


@dataclass(frozen=True, slots=True)
class RecallResult:
    context: str
    token_budget: int
    tokens_used: int
    memories: list[RecalledMemory]
    skipped: list[SkippedMemory]
    candidates: int
    plan: str
    min_relevance: float
    latency_ms: dict[str, float]
    moment: Moment = PRESENT  # which memories counted as current (an instant, a past question, now)


@dataclass(slots=True)
class ForgetFilter:
    older_than_days: float | None = None
    salience_below: float | None = None
    decayed_below: float | None = None
    type: MemoryType | None = None


@dataclass(frozen=True, slots=True)
class History:
    events: list[MemoryEvent]
    versions: list[Memory]
    current: list[uuid.UUID] | None = None  # with an instant: the versions current at it
