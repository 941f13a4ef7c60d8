"""Checks shared by every entry point (HTTP, agent tools, import)."""

from __future__ import annotations

from datetime import UTC, datetime

from app.lib.errors import ValidationFailed

# PostgreSQL stores far wider ranges, but year 1 or 9999 turn into +-infinity or overflow when
# Python does date arithmetic with them; no memory is observed or expires outside this window.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def check_time(name: str, value: datetime | None) -> None:
    """A timestamp must be timezone-aware and within 1970-2200."""
    if value is None:
        return
    if value.tzinfo is None:
        raise ValidationFailed(f"{name} must carry a timezone (ISO 8601 with Z or an offset)")
    if not EARLIEST <= value < LATEST:
        raise ValidationFailed(f"{name} must be between 1970 and 2200")
