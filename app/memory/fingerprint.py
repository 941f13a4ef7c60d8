"""Has a memory changed since someone looked at it? A short digest of everything a decision rests on.

Dream proposals store each target's fingerprint; `apply` refuses (marks `stale`) a proposal whose
targets no longer match. Access statistics are left out on purpose: a recall reinforcing a memory
does not change what it says, so it must not invalidate an approval.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from app.db.models import Memory


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).isoformat() if value is not None else ""


def fingerprint(memory: Memory) -> str:
    """16 hex characters over status, content, slot, scores, privacy, scope, expiry and updated_at."""
    parts = (
        memory.status,
        memory.type,
        memory.subject or "",
        memory.content_hash,
        f"{memory.importance:.6f}",
        f"{memory.confidence:.6f}",
        f"{memory.salience:.6f}",
        memory.privacy,
        memory.user_id,
        memory.project_id or "",
        _when(memory.expires_at),
        _when(memory.updated_at),
    )
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def fingerprints(memories: list[Memory]) -> dict[str, str]:
    """`{id: fingerprint}`, the form stored in a proposal's payload."""
    return {str(m.id): fingerprint(m) for m in memories}
