"""What a change event says outside the service, the same for a webhook and the live stream.

`{"id": <event id>, "type": "memory.<kind>", "created_at": ..., "data": {memory_id, user_id,
project_id, kind, actor, details}}`. No content, no reason, no tenant: a receiver that needs a memory's
text fetches it with the tenant's key, so text never sits in a receiver's logs or in the outbox, and an
erase is not undone by copies the service cannot reach. `details` keeps only the non-content keys below
(the same list as the fan-out trigger in migrations/versions/0010_webhooks.py).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from app.db.models import MemoryEvent

SNAPSHOT_DETAILS = ("successor", "rule", "source", "type", "proposal_id", "proposal_kind", "targets")


def snapshot_of(event: MemoryEvent) -> dict[str, Any]:
    """The trigger's snapshot of an event, built from the row (for the live stream)."""
    details = {k: event.details[k] for k in SNAPSHOT_DETAILS if event.details.get(k) is not None}
    snapshot: dict[str, Any] = {
        "memory_id": None if event.memory_id is None else str(event.memory_id),
        "user_id": event.user_id,
        "project_id": event.project_id,
        "kind": event.kind,
        "actor": event.actor,
        "at": event.created_at.isoformat(),
        "details": details,
    }
    return {k: v for k, v in snapshot.items() if v is not None}


def envelope(event_id: int, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The JSON a receiver gets for one event; `id` is stable across retries (deduplicate on it)."""
    data = {
        "memory_id": snapshot.get("memory_id"),
        "user_id": snapshot.get("user_id"),
        "project_id": snapshot.get("project_id"),
        "kind": snapshot.get("kind"),
        "actor": snapshot.get("actor"),
        "details": snapshot.get("details") or {},
    }
    return {
        "id": event_id,
        "type": f"memory.{snapshot.get('kind')}",
        "created_at": _iso(snapshot.get("at")),
        "data": data,
    }


def encode(body: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed)."""
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return None if value is None else str(value)
