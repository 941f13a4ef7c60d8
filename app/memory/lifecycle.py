"""The sweep's decisions as pure functions: which live memory expires, which goes cold (archived)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.store.maintenance import SweepAction, SweepCandidate, SweepPolicy
from app.vocabulary import LIVE_STATUSES, is_protected

__all__ = ["SweepAction", "SweepCandidate", "SweepDecision", "SweepPolicy", "sweep_decision"]

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True, slots=True)
class SweepDecision:
    action: SweepAction
    reason: str
    details: dict[str, object]


def sweep_decision(c: SweepCandidate, now: datetime, policy: SweepPolicy) -> SweepDecision | None:
    """Expire a live memory whose time is up; archive an active one that is cold and unimportant.

    Pinned memories and critical rules are never archived (they expire only when given an expiry).
    """
    if c.status not in LIVE_STATUSES:
        return None
    if c.expires_at is not None and c.expires_at <= now:
        return SweepDecision(
            SweepAction.EXPIRE,
            f"expired: expires_at {c.expires_at.isoformat()} has passed",
            {"expires_at": c.expires_at.isoformat()},
        )
    if is_protected(c.status, c.type):
        return None
    if policy.archive_after_days <= 0:
        return None
    idle_days = (now - c.last_used).total_seconds() / SECONDS_PER_DAY
    if idle_days >= policy.archive_after_days and c.importance < policy.archive_importance_below:
        return SweepDecision(
            SweepAction.ARCHIVE,
            f"cold: unused for {idle_days:.0f} days (limit {policy.archive_after_days:g}) and importance "
            f"{c.importance:.2f} below {policy.archive_importance_below:.2f}",
            {
                "idle_days": round(idle_days, 2),
                "importance": c.importance,
                "archive_after_days": policy.archive_after_days,
                "archive_importance_below": policy.archive_importance_below,
            },
        )
    return None
