"""Links and events of an export hold together (app/portability/integrity.py): pure, no database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.lib.errors import ValidationFailed
from app.portability.document import ExportDocument, ExportedEvent, parse_document
from app.portability.integrity import check_events, check_links, imported_details
from tests.unit.test_portability_document import memory, raw

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def chain(n: int, *, close: bool = False) -> ExportDocument:
    """n memories, each superseding the one before it; `close`: the first supersedes the last."""
    ids = [str(uuid.uuid4()) for _ in range(n)]
    items = [memory(f"v{i}", id=ids[i], supersedes=ids[i - 1] if i else None) for i in range(n)]
    if close:
        items[0]["supersedes"] = ids[-1]
    return parse_document(raw(*items))


def test_a_long_chain_is_accepted_and_closing_it_anywhere_is_a_cycle() -> None:
    check_links(chain(500).memories)
    with pytest.raises(ValidationFailed, match=r"memories\[\d+\]\.supersedes forms a cycle"):
        check_links(chain(500, close=True).memories)
    with pytest.raises(ValidationFailed, match="forms a cycle"):
        check_links(chain(2, close=True).memories)


def with_events(*events: dict[str, Any], user: str = "u") -> ExportDocument:
    mid = str(uuid.uuid4())
    base = {"user_id": user, "kind": "created", "actor": "key:a", "created_at": NOW.isoformat()}
    return parse_document(raw(memory("x", id=mid), events=[base | {"memory_id": mid} | e for e in events]))


def test_event_rules() -> None:
    check_events(with_events({}, {"memory_id": None}), NOW)
    with pytest.raises(ValidationFailed, match=r"events\[0\]\.kind"):
        check_events(with_events({"kind": "teleported"}), NOW)
    late = (NOW + timedelta(minutes=6)).isoformat()
    with pytest.raises(ValidationFailed, match=r"events\[1\]\.created_at is in the future"):
        check_events(with_events({}, {"created_at": late}), NOW)
    check_events(with_events({"created_at": (NOW + timedelta(minutes=4)).isoformat()}), NOW)  # clock skew
    with pytest.raises(ValidationFailed, match=r"events\[0\]\.user_id"):
        check_events(with_events({"user_id": "mallory"}), NOW)
    ghost = str(uuid.uuid4())
    with pytest.raises(ValidationFailed, match=r"events\[0\]\.memory_id names no memory"):
        check_events(with_events({"memory_id": ghost}), NOW)
    # A memory erased before the export: its trail travels with its `erased` event.
    check_events(
        with_events({"memory_id": ghost, "kind": "pinned"}, {"memory_id": ghost, "kind": "erased"}), NOW
    )


def test_the_claimed_actor_is_kept_not_believed() -> None:
    e = ExportedEvent(
        user_id="u", kind="archived", actor="maintenance", details={"from": "active"}, created_at=NOW
    )
    assert imported_details(e) == {"original_actor": "maintenance", "from": "active"}
    again = ExportedEvent(
        user_id="u", kind="archived", actor="key:b", details=imported_details(e), created_at=NOW
    )
    assert imported_details(again)["original_actor"] == "maintenance"  # a second import keeps the first claim
