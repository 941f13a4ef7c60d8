"""HTTP payloads (msgspec Structs). Unknown fields are refused; ranges are checked in the domain."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

import msgspec

from app.db.models import Memory
from app.store.records import MemoryRecord, MemoryView
from app.vocabulary import AsOfKind, MemoryType, Privacy

NO_NUL = r"^[^\x00]*$"
# Identifiers fit their columns; text must not hold NUL bytes (PostgreSQL text cannot store them).
Ident = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=NO_NUL)]
Text = Annotated[str, msgspec.Meta(pattern=NO_NUL)]
Tag = Annotated[str, msgspec.Meta(max_length=100, pattern=NO_NUL)]
When = Annotated[datetime, msgspec.Meta(tz=True)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
TEN_YEARS_S = 10 * 365 * 86400
Ttl = Annotated[int, msgspec.Meta(gt=0, le=TEN_YEARS_S)]
Days = Annotated[float, msgspec.Meta(ge=0.0, le=36500.0)]
# Every list a client sends has a cap: tags are labels, not a store of their own.
MAX_TAGS = 50
Tags = Annotated[list[Tag], msgspec.Meta(max_length=MAX_TAGS)]
TypeNames = Annotated[list[MemoryType], msgspec.Meta(max_length=50)]


class Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base for request bodies: unknown fields are a 422, not silently dropped."""


class MemoryIn(Strict):
    user_id: Ident
    content: Text
    type: MemoryType = MemoryType.FACT
    subject: Ident | None = None
    project_id: Ident | None = None
    session_id: Ident | None = None
    importance: float = 0.5
    confidence: float = 0.8
    privacy: Privacy = Privacy.PUBLIC
    tags: Tags = msgspec.field(default_factory=list)
    expires_at: When | None = None
    ttl_seconds: Ttl | None = None
    pinned: bool = False
    observed_at: When | None = None
    summary: Text | None = None
    agent_id: Ident | None = None  # private to this agent (None: the user's, seen by all their agents)


MAX_BATCH = 1000


class BatchIn(Strict):
    items: Annotated[list[MemoryIn], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class MemoryPatch(Strict):
    content: Text | msgspec.UnsetType = msgspec.UNSET
    type: MemoryType | msgspec.UnsetType = msgspec.UNSET
    subject: Ident | msgspec.UnsetType | None = msgspec.UNSET
    importance: float | msgspec.UnsetType = msgspec.UNSET
    confidence: float | msgspec.UnsetType = msgspec.UNSET
    privacy: Privacy | msgspec.UnsetType = msgspec.UNSET
    tags: Tags | msgspec.UnsetType = msgspec.UNSET
    expires_at: When | msgspec.UnsetType | None = msgspec.UNSET

    def changes(self) -> dict[str, Any]:
        return {f: v for f in self.__struct_fields__ if (v := getattr(self, f)) is not msgspec.UNSET}


class RecallIn(Strict):
    user_id: Ident
    query: Text
    project_id: Ident | None = None
    token_budget: int | None = None
    types: TypeNames | None = None
    prefer_type: MemoryType | None = None
    min_relevance: Unit | None = None
    include_sensitive: bool = False
    explain: bool = True
    as_of: When | None = None  # what was current at this instant (RFC 3339 with an offset; future: now)
    as_of_kind: AsOfKind = AsOfKind.VALID
    agent_id: Ident | None = None  # also the user's agent-less memories and the agent's granted spaces


class ForgetFilterIn(Strict):
    older_than_days: Days | None = None
    salience_below: Unit | None = None
    decayed_below: Unit | None = None
    type: MemoryType | None = None


class ForgetIn(Strict):
    user_id: Ident
    project_id: Ident | None = None
    memory_id: uuid.UUID | None = None
    query: Text | None = None
    subject: Ident | None = None
    filter: ForgetFilterIn | None = None
    agent_id: Ident | None = None  # only that agent's own memories and the user's agent-less ones


class MemoryOut(MemoryView, kw_only=True):
    """A memory as the API shows it."""

    @classmethod
    def of(cls, m: Memory | MemoryRecord) -> MemoryOut:
        return cls(**{f: getattr(m, f) for f in cls.__struct_fields__})


class RememberOut(msgspec.Struct, kw_only=True):
    memory: MemoryOut
    action: str
    superseded: list[uuid.UUID]
    proposals: list[uuid.UUID]
    redacted: bool


class BatchOut(msgspec.Struct, kw_only=True):
    results: list[RememberOut]


class MemoryPage(msgspec.Struct, kw_only=True):
    items: list[MemoryOut]
    next_cursor: str | None


class PassageOut(msgspec.Struct, kw_only=True):
    """The passage of a long memory that its context line shows: its index among the memory's passages
    and its characters [start, end) of `memory.content`."""

    index: int
    start: int
    end: int


class RecalledOut(msgspec.Struct, kw_only=True):
    memory: MemoryOut
    score: float
    relevance: float
    components: dict[str, float]
    tokens: int
    passage: PassageOut | None = None  # null: the line shows the whole memory


class SkippedOut(msgspec.Struct, kw_only=True):
    id: uuid.UUID
    reason: str
    score: float
    relevance: float
    components: dict[str, float]


class IncludedOut(msgspec.Struct, kw_only=True):
    id: uuid.UUID
    score: float
    tokens: int
    superseded: bool  # no longer current: its line says when it was superseded
    relevance: float = 0.0  # the value compared with min_relevance (docs/API.md)
    passage: int | None = None  # the index of the passage its line shows (null: the whole memory)


class TraceOut(msgspec.Struct, kw_only=True):
    included: list[IncludedOut]
    skipped: list[SkippedOut]
    candidates: int
    plan: str
    min_relevance: float
    tokens_used: int
    tokens_left: int
    latency_ms: dict[str, float]
    as_of: datetime | None  # the instant recalled (null: now)
    as_of_kind: AsOfKind | None
    past: bool  # the query asks about the past: superseded memories were eligible


class RecallOut(msgspec.Struct, kw_only=True):
    context: str
    token_budget: int
    tokens_used: int
    memories: list[RecalledOut]
    trace: TraceOut | None


class ForgottenOut(msgspec.Struct, kw_only=True):
    forgotten: list[uuid.UUID]


class EventOut(msgspec.Struct, kw_only=True):
    id: int
    memory_id: uuid.UUID | None
    user_id: str
    project_id: str | None
    kind: str  # an EventKind; imported audit trails may hold kinds a later version added
    actor: str
    reason: str | None
    details: dict[str, Any]
    created_at: datetime


class HistoryOut(msgspec.Struct, kw_only=True):
    events: list[EventOut]
    versions: list[MemoryOut]
    current: list[uuid.UUID] | None  # with as_of: the versions current at that instant


class StatsOut(msgspec.Struct, kw_only=True):
    total: int
    by_status: dict[str, int]
    by_type: dict[str, int]
    embed_model: str
    mismatched: int


class EraseReceipt(msgspec.Struct, kw_only=True):
    user_id: str
    project_id: str | None
    memories: int
    messages: int
    events: int
    proposals: int
    usage_events: int


class ErrorOut(msgspec.Struct, kw_only=True):
    error: str
    detail: str
