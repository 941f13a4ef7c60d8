"""The one way a memory is superseded: status, links, validity and an audited event, nothing deleted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from app.db.models import Memory
from app.memory.repository import MemoryRepository
from app.vocabulary import EventKind, MemoryStatus


def retire(
    repo: MemoryRepository,
    old: Memory,
    new: Memory,
    *,
    rule: str,
    reason: str,
    actor: str,
    now: datetime,
    cosine: float | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Mark `old` superseded by `new`; the `superseded` event names the successor and the rule that fired."""
    old.status = MemoryStatus.SUPERSEDED
    old.superseded_by = new.id
    old.valid_to = new.valid_from
    old.updated_at = now
    if new.supersedes is None:
        new.supersedes = old.id
    repo.add_event(
        memory_id=old.id,
        user_id=old.user_id,
        project_id=old.project_id,
        kind=EventKind.SUPERSEDED,
        actor=actor,
        reason=reason,
        details={"successor": str(new.id), "rule": rule, "cosine": cosine, **(extra or {})},
    )
