"""The one way a memory is superseded: status, links, validity and an audited event, nothing deleted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from app.db.models import Memory
from app.store.events import NewEvent
from app.vocabulary import EventKind, MemoryStatus


def retire(
    old: Memory,
    new: Memory,
    *,
    rule: str,
    reason: str,
    now: datetime,
    cosine: float | None = None,
    extra: dict[str, Any] | None = None,
) -> NewEvent:
    """Mark `old` superseded by `new`; returns the `superseded` event to record, which names the
    successor and the rule that fired."""
    old.status = MemoryStatus.SUPERSEDED
    old.superseded_by = new.id
    old.valid_to = new.valid_from
    old.updated_at = now
    if new.supersedes is None:
        new.supersedes = old.id
    details = {"successor": str(new.id), "rule": rule, "cosine": cosine, **(extra or {})}
    return NewEvent.about(old, EventKind.SUPERSEDED, reason, details)
