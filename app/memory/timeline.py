"""The timeline: what happened to a user's memories, newest first (who, when, what, why)."""

from __future__ import annotations

import base64
from datetime import datetime

from app.db.models import MemoryEvent
from app.lib.errors import ValidationFailed
from app.memory.event_repository import EventRepository

MAX_PAGE = 500


def encode_event_cursor(event: MemoryEvent) -> str:
    raw = f"{event.created_at.isoformat()}|{event.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_event_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        created, _, event_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        when, after = datetime.fromisoformat(created), int(event_id)
        if when.tzinfo is None:
            raise ValueError("naive time")
        return when, after
    except ValueError as exc:  # binascii.Error and UnicodeDecodeError are ValueErrors too
        raise ValidationFailed("cursor is not one this service returned") from exc


class Timeline:
    """Pages through one tenant's audit trail."""

    def __init__(self, repo: EventRepository) -> None:
        self.repo = repo

    async def page(
        self, user_id: str, *, project_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[MemoryEvent], str | None]:
        if not user_id.strip():
            raise ValidationFailed("user_id must not be empty")
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationFailed(f"limit must be between 1 and {MAX_PAGE}")
        after = decode_event_cursor(cursor) if cursor else None
        rows = await self.repo.page(user_id, project_id=project_id, after=after, limit=limit)
        next_cursor = encode_event_cursor(rows[limit - 1]) if len(rows) > limit else None
        return rows[:limit], next_cursor
