"""Inputs and results of the memory service (plain dataclasses; the API maps them to JSON)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from app.db.models import Memory
from app.memory.types import MemoryType, Privacy, Source


@dataclass(slots=True)
class RememberInput:
    user_id: str
    content: str
    type: str = MemoryType.FACT
    subject: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    importance: float = 0.5
    confidence: float = 0.8
    privacy: str = Privacy.PUBLIC
    tags: list[str] = field(default_factory=list)
    expires_at: datetime | None = None
    ttl_seconds: int | None = None
    pinned: bool = False
    observed_at: datetime | None = None
    summary: str | None = None
    source: str = Source.API
    source_model: str | None = None
    source_message_id: uuid.UUID | None = None


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
    types: list[str] | None = None
    prefer_type: str | None = None
    min_relevance: float | None = None
    include_sensitive: bool = False
    explain: bool = True


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A memory as the API shows it (no embedding, no tsvector), read-only and detached from any session:
    what recall returns. Building ORM objects for the returned memories instead cost ~40 us each."""

    tenant_id: uuid.UUID
    id: uuid.UUID
    user_id: str
    project_id: str | None
    session_id: str | None
    type: str
    subject: str | None
    content: str
    summary: str | None
    status: str
    importance: float
    salience: float
    confidence: float
    privacy: str
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    expires_at: datetime | None
    last_accessed_at: datetime | None
    access_count: int
    supersedes: uuid.UUID | None
    superseded_by: uuid.UUID | None
    source: str
    source_model: str | None
    source_message_id: uuid.UUID | None
    embed_model: str | None
    content_hash: str


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    memory: MemoryRecord
    score: float
    relevance: float
    components: dict[str, float]
    tokens: int


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


@dataclass(slots=True)
class ForgetFilter:
    older_than_days: float | None = None
    salience_below: float | None = None
    decayed_below: float | None = None
    type: str | None = None


@dataclass(frozen=True, slots=True)
class History:
    events: list[object]
    versions: list[Memory]
