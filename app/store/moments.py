"""Which memories were current at a moment, as SQL over `memories` (`app.vocabulary.Moment`).

The present is `scope_sql(..., live=True, unexpired=True)` itself, untouched. Every other moment is
written here once, for recall's candidates, the list and history alike. The parameters are `:now`
(present and past questions) and `:as_of` (an instant).

- A past question: the live memories and the superseded ones, unexpired now; forgotten, archived and
  expired memories stay out.
- Valid time at T: `valid_from <= T < valid_to` (supersession sets `valid_to`, `app/memory/retire.py`),
  not expired by T, and not forgotten by T (the last `forgotten` event of a forgotten memory is after T).
- Recorded time at T: recorded by T (`created_at`), not expired by T, and the last status event
  recorded up to T left it live (none: it was live since it was written).
"""

from __future__ import annotations

from typing import Any

from app.vocabulary import LIVE_STATUSES, AsOfKind, EventKind, MemoryStatus, Moment

# Events that change whether a memory is live, and those that leave it live.
_STATUS_EVENTS = (
    EventKind.SUPERSEDED, EventKind.ARCHIVED, EventKind.EXPIRED, EventKind.FORGOTTEN,
    EventKind.RESTORED, EventKind.PINNED, EventKind.UNPINNED,
)  # fmt: skip
_LIVE_EVENTS = (EventKind.CREATED, EventKind.RESTORED, EventKind.PINNED, EventKind.UNPINNED)


def _listed(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _events_of(t: str) -> str:
    return f"FROM memory_events e WHERE e.tenant_id = {t}.tenant_id AND e.memory_id = {t}.id"


def moment_sql(moment: Moment, *, table: str = "memories") -> str:
    """The rows of `table` current at `moment` (not the present: that is `scope_sql`'s `live`)."""
    t = table
    if moment.as_of is None:
        statuses = (*LIVE_STATUSES, MemoryStatus.SUPERSEDED) if moment.past else LIVE_STATUSES
        return f"({t}.status IN ({_listed(statuses)}) AND ({t}.expires_at IS NULL OR {t}.expires_at > :now))"
    unexpired = f"({t}.expires_at IS NULL OR {t}.expires_at > :as_of)"
    if moment.kind is AsOfKind.VALID:
        forgotten_after = (
            f"(SELECT max(e.created_at) {_events_of(t)} AND e.kind = '{EventKind.FORGOTTEN}') > :as_of"
        )
        return (
            f"({t}.valid_from <= :as_of AND ({t}.valid_to IS NULL OR {t}.valid_to > :as_of) AND {unexpired}"
            f" AND ({t}.status <> '{MemoryStatus.FORGOTTEN}' OR {forgotten_after}))"
        )
    last_status = (
        f"(SELECT e.kind {_events_of(t)} AND e.kind IN ({_listed(_STATUS_EVENTS)})"
        " AND e.created_at <= :as_of ORDER BY e.created_at DESC, e.id DESC LIMIT 1)"
    )
    return (
        f"({t}.created_at <= :as_of AND {unexpired}"
        f" AND coalesce({last_status}, '{EventKind.CREATED}') IN ({_listed(_LIVE_EVENTS)}))"
    )


def moment_params(moment: Moment) -> dict[str, Any]:
    """`:as_of` for an instant (`:now` comes with the scope's parameters)."""
    return {} if moment.as_of is None else {"as_of": moment.as_of}
