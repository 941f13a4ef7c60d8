"""Plain records the store returns where an ORM object would cost more than it gives."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from app.vocabulary import MemoryStatus, MemoryType, Privacy, Source


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A memory as the API shows it (no embedding, no tsvector), read-only and detached from any session:
    what recall returns. Building ORM objects for the returned memories instead cost ~40 us each."""

    tenant_id: uuid.UUID
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
    content_hash: str
