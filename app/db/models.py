"""SQLAlchemy models. The schema itself is created by Alembic migrations, never at run time.

Every tenant table starts its primary key with `tenant_id` (Citus-ready) and is protected by
row-level security in the migration.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    DateTime,
    Enum,
    Float,
    ForeignKeyConstraint,
    Identity,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Text,
    event,
    func,
    inspect,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column
from sqlalchemy.orm.attributes import set_committed_value

from app.lib.tokens import content_tokens
from app.vocabulary import MemoryStatus, MemoryType, Privacy, ProposalKind, ProposalStatus, Source

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

TSVECTOR_EXPRESSION = "to_tsvector('english', coalesce(subject, '') || ' ' || content)"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _enum(values: type[StrEnum], length: int) -> Enum:
    """A column holding one of an enum's values as plain text (the migrations declare VARCHAR, no CHECK):
    rows load as enum members, and an unknown value is refused before it is written."""
    return Enum(
        values,
        native_enum=False,
        create_constraint=False,
        length=length,
        values_callable=lambda members: [m.value for m in members],
        validate_strings=True,
    )


def _now_column() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), nullable=False, server_default=func.now())


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False, unique=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default="{}")
    created_at: Mapped[datetime] = _now_column()


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    prefix: Mapped[str] = mapped_column(String(32), nullable=False)
    key_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    created_at: Mapped[datetime] = _now_column()
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class MemoryAccess(Base):
    """How often and when recall last handed a memory back (no row: never). Apart from `memories` so
    that reinforcing a memory updates a narrow row, not the memory's (migration 0008)."""

    __tablename__ = "memory_access"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "memory_id"], ["memories.tenant_id", "memories.id"], ondelete="CASCADE"
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    access_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_accessed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


def _access(column: Any, tenant_id: Any, memory_id: Any) -> Any:
    """A memory's `column` of its MemoryAccess row, as a subquery read with the memory."""
    return (
        select(column)
        .where(MemoryAccess.tenant_id == tenant_id, MemoryAccess.memory_id == memory_id)
        .correlate_except(MemoryAccess)
        .scalar_subquery()
    )


class Memory(Base):
    __tablename__ = "memories"
    __table_args__ = (
        ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        ForeignKeyConstraint(["tenant_id", "space"], ["spaces.tenant_id", "spaces.name"]),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(200), nullable=False)
    project_id: Mapped[str | None] = mapped_column(String(200))
    session_id: Mapped[str | None] = mapped_column(String(200))
    # NULL: the user's own memory, seen by every agent of the user; else private to that agent.
    agent_id: Mapped[str | None] = mapped_column(String(200))
    # A shared space's memory (user_id is then SPACE_USER); NULL for every user's memory.
    space: Mapped[str | None] = mapped_column(String(100))
    type: Mapped[MemoryType] = mapped_column(_enum(MemoryType, 32), nullable=False)
    subject: Mapped[str | None] = mapped_column(String(200))
    content: Mapped[str] = mapped_column(Text, nullable=False)
    summary: Mapped[str | None] = mapped_column(Text)
    status: Mapped[MemoryStatus] = mapped_column(_enum(MemoryStatus, 16), nullable=False)
    importance: Mapped[float] = mapped_column(Float, nullable=False)
    salience: Mapped[float] = mapped_column(Float, nullable=False)
    confidence: Mapped[float] = mapped_column(Float, nullable=False)
    privacy: Mapped[Privacy] = mapped_column(_enum(Privacy, 16), nullable=False)
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False, server_default="{}")
    created_at: Mapped[datetime] = _now_column()
    updated_at: Mapped[datetime] = _now_column()
    valid_from: Mapped[datetime] = _now_column()
    valid_to: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    supersedes: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    superseded_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    source: Mapped[Source] = mapped_column(_enum(Source, 16), nullable=False)
    source_model: Mapped[str | None] = mapped_column(String(200))
    source_message_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    embed_model: Mapped[str | None] = mapped_column(String(200))
    # Deferred: recall ranks in SQL and never needs the vectors in Python.
    embedding: Mapped[list[float] | None] = mapped_column(Vector(), deferred=True)
    content_tsv: Mapped[str] = mapped_column(TSVECTOR, Computed(TSVECTOR_EXPRESSION, persisted=True))
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    # Tokens of the content as a context line shows it (app/memory/lines.py), set on every ORM write that
    # changes the content; NULL for rows written before migration 0007 (recall then counts the line).
    content_tokens: Mapped[int | None] = mapped_column(Integer)
    # A new value from a sequence on every insert and every change to what the terms derive from
    # (content, subject: a trigger; passages: their rebuild), migrations 0014-0015; read only by recall's
    # listing of a scope (app/store/terms.py).
    terms_version: Mapped[int] = mapped_column(
        BigInteger,
        nullable=False,
        server_default=text("nextval('memories_terms_version_seq')"),
        deferred=True,
    )
    # Read with the memory, written apart (`MemoryRepository.record_access`): reinforcement updates a
    # narrow MemoryAccess row, never this one. Kept through flushes: nothing here writes them.
    access_count: Mapped[int] = column_property(
        func.coalesce(_access(MemoryAccess.access_count, tenant_id, id), literal_column("0")),
        expire_on_flush=False,
    )
    last_accessed_at: Mapped[datetime | None] = column_property(
        _access(MemoryAccess.last_accessed_at, tenant_id, id), expire_on_flush=False
    )


@event.listens_for(Memory, "init")
def _never_accessed(memory: Memory, _args: Any, _kwargs: Any) -> None:
    set_committed_value(memory, "access_count", 0)
    set_committed_value(memory, "last_accessed_at", None)


@event.listens_for(Memory, "before_insert")
def _count_new_content(_mapper: Any, _connection: Any, memory: Memory) -> None:
    memory.content_tokens = content_tokens(memory.content)


@event.listens_for(Memory, "before_update")
def _count_changed_content(_mapper: Any, _connection: Any, memory: Memory) -> None:
    if inspect(memory).attrs.content.history.has_changes():
        memory.content_tokens = content_tokens(memory.content)


class MemoryPassage(Base):
    """A sentence-aligned window of a long memory's content (migration 0012): offsets into the content,
    its own vector and tsvector. Written and rebuilt by app/memory/passage_index.py, read by recall."""

    __tablename__ = "memory_passages"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "memory_id"], ["memories.tenant_id", "memories.id"], ondelete="CASCADE"
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    ordinal: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(200), nullable=False)
    char_start: Mapped[int] = mapped_column(Integer, nullable=False)
    char_end: Mapped[int] = mapped_column(Integer, nullable=False)
    tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    embed_model: Mapped[str | None] = mapped_column(String(200))
    embedding: Mapped[list[float] | None] = mapped_column(Vector(), deferred=True)
    content_tsv: Mapped[str] = mapped_column(TSVECTOR, nullable=False)


class MemoryEvent(Base):
    __tablename__ = "memory_events"
    __table_args__ = (ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=False), primary_key=True)
    memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    user_id: Mapped[str] = mapped_column(String(200), nullable=False)
    project_id: Mapped[str | None] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    actor: Mapped[str] = mapped_column(String(200), nullable=False)
    reason: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default="{}")
    created_at: Mapped[datetime] = _now_column()


class DreamProposal(Base):
    __tablename__ = "dream_proposals"
    __table_args__ = (ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(200), nullable=False)
    project_id: Mapped[str | None] = mapped_column(String(200))
    kind: Mapped[ProposalKind] = mapped_column(_enum(ProposalKind, 16), nullable=False)
    target_ids: Mapped[list[uuid.UUID]] = mapped_column(ARRAY(UUID(as_uuid=True)), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default="{}")
    rationale: Mapped[str | None] = mapped_column(Text)
    status: Mapped[ProposalStatus] = mapped_column(_enum(ProposalStatus, 16), nullable=False)
    model: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = _now_column()
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    applied_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Space(Base):
    """A tenant's shared scope (a team or a project): agents granted on it read its memories."""

    __tablename__ = "spaces"
    __table_args__ = (ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    description: Mapped[str | None] = mapped_column(String(200))
    auto_approve: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="false")
    created_by: Mapped[str] = mapped_column(String(200), nullable=False)
    created_at: Mapped[datetime] = _now_column()


class SpaceGrant(Base):
    """One agent's access to a space: it reads the space; `can_propose`: it may propose promotions."""

    __tablename__ = "space_grants"
    __table_args__ = (
        ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        ForeignKeyConstraint(["tenant_id", "space"], ["spaces.tenant_id", "spaces.name"], ondelete="CASCADE"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    space: Mapped[str] = mapped_column(String(100), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    can_propose: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="true")
    granted_by: Mapped[str] = mapped_column(String(200), nullable=False)
    created_at: Mapped[datetime] = _now_column()


class Message(Base):
    """A redacted conversation turn: provenance for memories and short-term context for chat."""

    __tablename__ = "messages"
    __table_args__ = (ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(200), nullable=False)
    project_id: Mapped[str | None] = mapped_column(String(200))
    session_id: Mapped[str | None] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    model: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = _now_column()


class UsageEvent(Base):
    """One model call: what it cost, as the provider reported it (or tiktoken for the offline model)."""

    __tablename__ = "usage_events"
    __table_args__ = (ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=False), primary_key=True)
    user_id: Mapped[str | None] = mapped_column(String(200))
    session_id: Mapped[str | None] = mapped_column(String(200))
    request_id: Mapped[str | None] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    prompt_tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    completion_tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    total_tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    latency_ms: Mapped[float] = mapped_column(Float, nullable=False)
    created_at: Mapped[datetime] = _now_column()


class Webhook(Base):
    """A tenant's endpoint for change events. Its signing secret is derived, never stored."""

    __tablename__ = "webhooks"
    __table_args__ = (ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    description: Mapped[str | None] = mapped_column(String(200))
    event_types: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False, server_default="{}")
    active: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="true")
    created_at: Mapped[datetime] = _now_column()


class WebhookDelivery(Base):
    """The outbox: one event for one webhook, written by a trigger in the event's transaction."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        ForeignKeyConstraint(
            ["tenant_id", "webhook_id"], ["webhooks.tenant_id", "webhooks.id"], ondelete="CASCADE"
        ),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=False), primary_key=True)
    webhook_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    event_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    event: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False, server_default="pending")
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(String(200))
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _now_column()
