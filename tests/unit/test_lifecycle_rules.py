"""The sweep's decisions and memory fingerprints, as pure functions."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from app.db.models import Memory
from app.memory.fingerprint import fingerprint
from app.memory.lifecycle import SweepAction, SweepCandidate, SweepPolicy, sweep_decision

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
POLICY = SweepPolicy(archive_after_days=90, archive_importance_below=0.3)


def candidate(**over: object) -> SweepCandidate:
    values: dict[str, object] = {
        "id": uuid.uuid4(),
        "user_id": "u",
        "project_id": None,
        "status": "active",
        "type": "fact",
        "importance": 0.1,
        "expires_at": None,
        "last_used": NOW - timedelta(days=10),
    }
    values.update(over)
    return SweepCandidate(**values)  # type: ignore[arg-type]


def test_a_live_memory_past_its_expiry_expires_with_a_reason() -> None:
    decision = sweep_decision(candidate(expires_at=NOW - timedelta(seconds=1)), NOW, POLICY)
    assert decision is not None
    assert decision.action is SweepAction.EXPIRE
    assert "has passed" in decision.reason


def test_pinned_memories_expire_too_when_given_an_expiry() -> None:
    decision = sweep_decision(candidate(status="pinned", expires_at=NOW), NOW, POLICY)
    assert decision is not None
    assert decision.action is SweepAction.EXPIRE


def test_cold_unimportant_memory_is_archived_with_its_numbers_in_the_reason() -> None:
    decision = sweep_decision(candidate(last_used=NOW - timedelta(days=120)), NOW, POLICY)
    assert decision is not None
    assert decision.action is SweepAction.ARCHIVE
    assert "120 days" in decision.reason
    assert decision.details["importance"] == 0.1


def test_cold_memory_is_kept_when_recently_used_or_important() -> None:
    assert sweep_decision(candidate(last_used=NOW - timedelta(days=89)), NOW, POLICY) is None
    old = NOW - timedelta(days=400)
    assert sweep_decision(candidate(last_used=old, importance=0.3), NOW, POLICY) is None


def test_pinned_and_critical_memories_are_never_archived() -> None:
    old = NOW - timedelta(days=4000)
    assert sweep_decision(candidate(last_used=old, status="pinned"), NOW, POLICY) is None
    assert sweep_decision(candidate(last_used=old, type="critical_rule"), NOW, POLICY) is None


def test_only_live_memories_are_swept_and_zero_days_disables_archival() -> None:
    old = NOW - timedelta(days=4000)
    for status in ("archived", "expired", "superseded", "forgotten"):
        assert sweep_decision(candidate(status=status, last_used=old, expires_at=old), NOW, POLICY) is None
    assert sweep_decision(candidate(last_used=old), NOW, SweepPolicy(0, 0.3)) is None


def memory(**over: object) -> Memory:
    values: dict[str, object] = {
        "id": uuid.uuid4(),
        "user_id": "u",
        "project_id": None,
        "type": "fact",
        "subject": "editor",
        "content": "Editor is vim",
        "status": "active",
        "importance": 0.5,
        "salience": 1.0,
        "confidence": 0.8,
        "privacy": "public",
        "expires_at": None,
        "updated_at": NOW,
        "content_hash": "abc",
        "access_count": 0,
        "last_accessed_at": None,
    }
    values.update(over)
    return Memory(**values)


def test_fingerprint_changes_with_what_a_decision_rests_on() -> None:
    base = memory()
    same_id = base.id
    for change in (
        {"content_hash": "def"},
        {"status": "pinned"},
        {"importance": 0.6},
        {"salience": 0.4},
        {"subject": "ide"},
        {"expires_at": NOW},
        {"updated_at": NOW + timedelta(microseconds=1)},
    ):
        assert fingerprint(memory(id=same_id, **change)) != fingerprint(base), change


def test_fingerprint_ignores_access_statistics_so_recall_never_invalidates_an_approval() -> None:
    base = memory()
    touched = memory(id=base.id, access_count=9, last_accessed_at=NOW)
    assert fingerprint(touched) == fingerprint(base)


def test_fingerprint_is_the_same_for_the_same_instant_in_any_timezone() -> None:
    from datetime import timezone

    base = memory()
    shifted = memory(id=base.id, updated_at=NOW.astimezone(timezone(timedelta(hours=5))))
    assert fingerprint(shifted) == fingerprint(base)
