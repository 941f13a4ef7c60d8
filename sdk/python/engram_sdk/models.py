"""What the service returns, as msgspec Structs mirroring the API's JSON (`/schema/openapi.json`).

Decoding ignores fields this SDK does not know, so a newer server that adds fields never breaks it.
Enumerated values (type, status, privacy ...) are plain strings here for the same reason; the request
side uses the Literal aliases below, so a type checker catches a misspelt memory type.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

import msgspec

T = TypeVar("T")

MemoryType = Literal[
    "identity",
    "preference",
    "fact",
    "decision",
    "constraint",
    "critical_rule",
    "project",
    "task",
    "deadline",
    "learning_goal",
    "mistake",
    "episodic",
    "temporary",
]
MemoryStatus = Literal["active", "pinned", "superseded", "archived", "expired", "forgotten"]
Privacy = Literal["public", "private", "sensitive"]
ProposalStatus = Literal["proposed", "approved", "rejected", "applied", "stale"]
Role = Literal["user", "assistant", "system"]
# `as_of` in valid time (what held then, as known now) or recorded time (what Engram held then).
AsOfKind = Literal["valid", "recorded"]


class Model(msgspec.Struct, kw_only=True):
    """Base of every response struct."""


class Page(Model, Generic[T]):
    """One page of a list; pass `next_cursor` back as `cursor` (the `iter_*` methods do it for you)."""

    items: list[T]
    next_cursor: str | None


class Memory(Model):
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
    agent_id: str | None = None  # the agent whose private memory this is (None: the user's own)
    space: str | None = None  # the shared space it lives in (None: a user's memory)


class RememberResult(Model):
    memory: Memory
    action: str  # created | deduplicated | superseded
    superseded: list[uuid.UUID]
    proposals: list[uuid.UUID]
    redacted: bool


class BatchResult(Model):
    results: list[RememberResult]


class Forgotten(Model):
    forgotten: list[uuid.UUID]


class Event(Model):
    id: int
    memory_id: uuid.UUID | None
    user_id: str
    project_id: str | None
    kind: str
    actor: str
    reason: str | None
    details: dict[str, Any]
    created_at: datetime


class History(Model):
    events: list[Event]
    versions: list[Memory]  # the slot's chain, newest first
    current: list[uuid.UUID] | None = None  # with `as_of`: the versions current at that instant


class Passage(Model):
    """The passage of a long memory that its context line shows: its index among the memory's passages
    and its characters [start, end) of `memory.content`."""

    index: int
    start: int
    end: int


class RecalledMemory(Model):
    memory: Memory
    score: float
    relevance: float
    components: dict[str, float]
    tokens: int
    passage: Passage | None = None  # None: the line shows the whole memory


class Included(Model):
    id: uuid.UUID
    score: float
    tokens: int
    superseded: bool = False  # no longer current (a question about the past, or `as_of`)
    relevance: float = 0.0  # the value compared with the floor (min_relevance)
    passage: int | None = None  # the index of the passage its line shows (None: the whole memory)


class Skipped(Model):
    id: uuid.UUID
    reason: str
    score: float
    relevance: float
    components: dict[str, float]


class Trace(Model):
    included: list[Included]
    skipped: list[Skipped]
    candidates: int
    plan: str
    min_relevance: float
    tokens_used: int
    tokens_left: int
    latency_ms: dict[str, float]
    as_of: datetime | None = None  # the instant recalled (None: now)
    as_of_kind: str | None = None
    past: bool = False  # the query asked about the past: superseded memories were eligible


class RecallResult(Model):
    context: str  # exactly what goes into a prompt; `tokens_used` counts this string
    token_budget: int
    tokens_used: int
    memories: list[RecalledMemory]
    trace: Trace | None


class Stats(Model):
    total: int
    by_status: dict[str, int]
    by_type: dict[str, int]
    embed_model: str
    mismatched: int


class EraseReceipt(Model):
    """Counts of what a hard erase removed."""

    user_id: str
    project_id: str | None
    memories: int
    messages: int
    events: int
    proposals: int
    usage_events: int


class UsageTotals(Model, kw_only=True):
    calls: int = 0
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatUsage(UsageTotals):
    by_model: dict[str, UsageTotals]


class ToolCall(Model):
    name: str
    arguments: dict[str, Any]
    result: dict[str, Any]


class ChatResult(Model):
    answer: str
    tool_calls: list[ToolCall]
    memories_used: list[uuid.UUID]
    trace: Trace | None
    usage: ChatUsage
    model: str
    mode: str  # online | offline | degraded


class ExtractAction(Model):
    action: str  # created | deduplicated | superseded | forgotten
    memory: Memory


class ExtractResult(Model):
    actions: list[ExtractAction]


class UsageLimits(Model, kw_only=True):
    """The tenant's limits (0: unlimited) and what it uses of them; empty when the service has none."""

    requests_per_minute: int | None = None
    concurrent_requests: int | None = None
    max_memories: int | None = None
    tokens_per_day: int | None = None
    requests_available: float | None = None  # left in the request bucket (None: no rate limit)
    memories_stored: int | None = None
    tokens_last_24h: int | None = None


class Usage(Model):
    total: UsageTotals
    by_model: dict[str, UsageTotals]
    by_kind: dict[str, UsageTotals]
    limits: UsageLimits = msgspec.field(default_factory=UsageLimits)


class UsageBucket(Model):
    start: datetime
    model: str
    kind: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class UsageSeries(Model):
    bucket: str  # minute | hour | day
    since: datetime
    until: datetime
    items: list[UsageBucket]  # buckets with calls only, oldest first


class User(Model):
    user_id: str
    memories: int  # every stored memory, whatever its status
    live: int  # active or pinned


class Project(Model):
    project_id: str
    memories: int
    live: int


class Proposal(Model):
    id: uuid.UUID
    user_id: str
    project_id: str | None
    kind: str  # merge | forget | resalience | supersede | promote
    target_ids: list[uuid.UUID]
    payload: dict[str, Any]
    rationale: str | None
    status: str
    model: str | None
    created_at: datetime
    decided_at: datetime | None
    applied_at: datetime | None


class DreamResult(Model):
    proposals: list[Proposal]
    mode: str
    created: int
    dropped: int


class AppliedProposal(Model):
    id: uuid.UUID
    kind: str
    status: str
    reason: str | None
    memory_id: uuid.UUID | None


class ApplyResult(Model):
    applied: int
    merged: int
    forgotten: int
    resalienced: int
    superseded: int
    stale: int
    skipped: int
    results: list[AppliedProposal]


class ImportResult(Model):
    imported: int
    deduplicated: int
    superseded: int
    mismatched: int
    remapped: int
    events: int
    proposals: int


class ReembedResult(Model):
    reembedded: int
    remaining: int


class Health(Model):
    status: str


class Readiness(Model):
    """`GET /ready`: 200 when the database is reachable and migrated, else 503 with the reason."""

    status: str  # ready | migrations_pending | unavailable
    migration: str | None = None
    current: str | None = None
    head: str | None = None
    detail: str | None = None

    @property
    def ready(self) -> bool:
        return self.status == "ready"


# The export document: everything needed to restore a user or a tenant elsewhere (POST /v1/import).
# Every field is kept, with the service's defaults, so a document survives a decode and re-encode.
class ExportedMemory(Model, kw_only=True):
    id: uuid.UUID
    user_id: str
    project_id: str | None = None
    session_id: str | None = None
    type: str
    subject: str | None = None
    content: str
    summary: str | None = None
    status: str
    importance: float = 0.5
    salience: float = 1.0
    confidence: float = 0.8
    privacy: str = "public"
    tags: list[str] = msgspec.field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    last_accessed_at: datetime | None = None
    access_count: int = 0
    supersedes: uuid.UUID | None = None
    superseded_by: uuid.UUID | None = None
    source: str = "api"
    source_model: str | None = None
    source_message_id: uuid.UUID | None = None
    embed_model: str | None = None
    embedding: list[float] | None = None
    content_hash: str | None = None
    agent_id: str | None = None  # private to this agent (absent: the user's own)


class ExportedEvent(Model, kw_only=True):
    id: int | None = None
    memory_id: uuid.UUID | None = None
    user_id: str
    project_id: str | None = None
    kind: str
    actor: str
    reason: str | None = None
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    created_at: datetime


class ExportedProposal(Model, kw_only=True):
    id: uuid.UUID
    user_id: str
    project_id: str | None = None
    kind: str
    target_ids: list[uuid.UUID]
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    rationale: str | None = None
    status: str
    model: str | None = None
    created_at: datetime
    decided_at: datetime | None = None
    applied_at: datetime | None = None


class ExportDocument(Model, kw_only=True):
    version: int
    exported_at: datetime
    embed_model: str | None = None
    user_id: str | None = None
    project_id: str | None = None
    memories: list[ExportedMemory]
    events: list[ExportedEvent] = msgspec.field(default_factory=list)
    proposals: list[ExportedProposal] = msgspec.field(default_factory=list)


MemoryPage = Page[Memory]
ProposalPage = Page[Proposal]
EventPage = Page[Event]
UserPage = Page[User]
ProjectPage = Page[Project]


# --- change events --------------------------------------------------------------------------------------


class Webhook(Model):
    id: uuid.UUID
    url: str
    description: str | None
    event_types: list[str]  # empty: every kind
    active: bool
    created_at: datetime


class WebhookCreated(Model):
    webhook: Webhook
    secret: str  # shown once: verify `Engram-Signature` with it (`engram_sdk.verify_signature`)


class WebhookList(Model):
    items: list[Webhook]


class Delivery(Model):
    id: int
    webhook_id: uuid.UUID
    event_id: int
    kind: str
    event: dict[str, Any]
    state: str  # pending | delivered | dead
    attempts: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime


class ChangeEvent(Model):
    """One change event, as a webhook receives it and the stream sends it (no memory content)."""

    id: int  # stable across retries: deduplicate on it
    type: str  # memory.<kind>
    created_at: str | None
    data: dict[str, Any]


DeliveryPage = Page[Delivery]


# --- shared spaces --------------------------------------------------------------------------------------


class SpaceGrant(Model):
    space: str
    agent_id: str
    can_propose: bool
    granted_by: str
    created_at: datetime


class Space(Model):
    name: str
    description: str | None
    auto_approve: bool
    created_by: str
    created_at: datetime
    grants: list[SpaceGrant]


class SpaceList(Model):
    items: list[Space]
