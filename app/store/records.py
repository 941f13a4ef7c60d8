"""Plain records the store returns where an ORM object would cost more than it gives."""

from __future__ import annotations

import uuid
from datetime import datetime

import msgspec

from app.vocabulary import MemoryStatus, MemoryType, Privacy, Source


class MemoryView(msgspec.Struct, kw_only=True):
    """Every field of a memory the API shows (the API's `MemoryOut` is this shape)."""

    id: uuid.UUID
    user_id: str
    project_id: str | None
    session_id: str | None
    type: MemoryType
    subject: str | None
    content: str
    summary: str | None
    status: MemoryStatus
    importance: float
    salience: float
    confidence: float
    privacy: Privacy
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
    source: Source
    source_model: str | None
    source_message_id: uuid.UUID | None
    embed_model: str | None
    agent_id: str | None = None  # the agent whose private memory this is (None: the user's own)
    space: str | None = None  # the shared space it lives in (None: a user's memory)


class MemoryRecord(MemoryView, kw_only=True):
    """A memory as recall returns it: read-only by convention and detached from any session. Building
    ORM objects for the returned memories instead cost ~40 us each."""

    tenant_id: uuid.UUID
    content_hash: str


# The columns a record is read from.
RECORD_COLUMNS = MemoryRecord.__struct_fields__
