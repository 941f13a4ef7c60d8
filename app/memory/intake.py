"""A write's first steps, pure: check an item, redact it, name its slot and lock, and build its row."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.db.models import Memory
from app.lib.errors import ValidationFailed
from app.lib.redaction import redact
from app.lib.validation import check_time
from app.memory.deadlines import deadline_expiry
from app.memory.models import RememberInput
from app.memory.slots import content_hash, hash_lock_key, normalise_subject, slot_lock_key
from app.tenancy.types import TenantId
from app.vocabulary import MemoryStatus, MemoryType, Scope


def check(item: RememberInput, index: int | None, max_chars: int) -> None:
    """Refuse what the payload's types cannot: empty or oversized text, NUL bytes, ranges, times."""
    where = "" if index is None else f"items[{index}]."
    if not item.user_id.strip() and item.space is None:
        raise ValidationFailed(f"{where}user_id must not be empty")
    if not item.content.strip():
        raise ValidationFailed(f"{where}content must not be empty")
    if len(item.content) > max_chars:
        raise ValidationFailed(f"{where}content is longer than {max_chars} characters")
    for name in ("importance", "confidence"):
        if not 0.0 <= getattr(item, name) <= 1.0:
            raise ValidationFailed(f"{where}{name} must be between 0 and 1")
    for name in ("user_id", "content", "subject", "project_id", "session_id", "summary"):
        if "\x00" in (getattr(item, name) or ""):
            raise ValidationFailed(f"{where}{name} must not contain NUL bytes")
    for name in ("observed_at", "expires_at"):
        check_time(f"{where}{name}", getattr(item, name))
    if item.ttl_seconds is not None and item.ttl_seconds <= 0:
        raise ValidationFailed(f"{where}ttl_seconds must be positive")
    if item.ttl_seconds is not None and item.expires_at is not None:
        raise ValidationFailed(f"{where}give expires_at or ttl_seconds, not both")


def _expiry(item: RememberInput, now: datetime, temporary_ttl: int) -> datetime | None:
    if item.expires_at is not None:
        return item.expires_at
    if item.ttl_seconds is not None:
        return now + timedelta(seconds=item.ttl_seconds)
    if item.type == MemoryType.TEMPORARY:
        return now + timedelta(seconds=temporary_ttl)
    if item.type == MemoryType.DEADLINE:
        return deadline_expiry(item.content, item.observed_at or now)
    return None


@dataclass(slots=True)
class Prepared:
    """One item as it will be stored: redacted, its slot normalised, its lock named."""

    item: RememberInput
    scope: Scope  # the item's project exactly: a slot lives in one project
    content: str
    summary: str | None
    subject: str | None
    digest: str
    redacted: bool
    observed_at: datetime
    expires_at: datetime | None
    lock_key: str

    @property
    def slot(self) -> tuple[str, str] | None:
        return (self.subject, self.item.type) if self.subject is not None else None


def item_scope(tenant: TenantId, item: RememberInput) -> Scope:
    """The slot an item lives in: its project exactly, and its agent's or its space's own memories."""
    return Scope(tenant, item.user_id, item.project_id, agent_id=item.agent_id, own=True, space=item.space)


def prepare(item: RememberInput, tenant: TenantId, now: datetime, temporary_ttl: int) -> Prepared:
    content = redact(item.content)
    summary = redact(item.summary) if item.summary else None
    subject = normalise_subject(redact(item.subject).text if item.subject else None)
    digest = content_hash(content.text)
    lock_key = (
        slot_lock_key(str(tenant), item.user_id, item.project_id, subject, item.type)
        if subject is not None
        else hash_lock_key(str(tenant), item.user_id, item.project_id, digest)
    )
    return Prepared(
        item=item,
        scope=item_scope(tenant, item),
        content=content.text,
        summary=summary.text if summary else None,
        subject=subject,
        digest=digest,
        redacted=content.changed or bool(summary and summary.changed),
        observed_at=item.observed_at or now,
        expires_at=_expiry(item, now, temporary_ttl),
        lock_key=lock_key,
    )


def new_memory(p: Prepared, vector: list[float], now: datetime, embed_model: str) -> Memory:
    item = p.item
    return Memory(
        tenant_id=p.scope.tenant,
        id=uuid.uuid4(),
        user_id=item.user_id,
        project_id=item.project_id,
        session_id=item.session_id,
        agent_id=item.agent_id,
        space=item.space,
        type=item.type,
        subject=p.subject,
        content=p.content,
        summary=p.summary,
        status=MemoryStatus.PINNED if item.pinned else MemoryStatus.ACTIVE,
        importance=item.importance,
        salience=1.0,
        confidence=item.confidence,
        privacy=item.privacy,
        tags=[redact(t).text for t in item.tags],
        created_at=now,
        updated_at=now,
        valid_from=p.observed_at,
        expires_at=p.expires_at,
        access_count=0,
        source=item.source,
        source_model=item.source_model,
        source_message_id=item.source_message_id,
        embed_model=embed_model,
        embedding=vector,
        content_hash=p.digest,
    )
