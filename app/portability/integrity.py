"""What an export's links and audit trail must satisfy before an import takes them.

The schema says what each field may hold; these rules say what the fields may say about each other.
A supersession link names another memory of the same document (never itself, never round a cycle),
so history walks end and `superseded_by` never points at nothing. An event names a memory of the
document, or one the document says was erased (a single-memory erase keeps the memory's scrubbed
trail), and that memory's user; its kind is one the service writes; its time is not in the future.
Who did it cannot be checked, so it is not believed: the importer is the actor of every imported
event, and the actor the document claimed is kept in the details (`original_actor`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from app.lib.errors import ValidationFailed
from app.vocabulary import EventKind

if TYPE_CHECKING:
    from app.portability.document import ExportDocument, ExportedEvent, ExportedMemory

# Event times are stamped by the database's clock, so they are compared with the wall clock (not the
# service's injectable one), with room for two machines' clocks to disagree.
CLOCK_SKEW = timedelta(minutes=5)
LINKS = ("supersedes", "superseded_by")
_KINDS = frozenset(EventKind)


def check_links(memories: Sequence[ExportedMemory]) -> None:
    """Every supersession link names another memory of the document, and no chain comes back round."""
    index = {m.id: i for i, m in enumerate(memories)}
    for i, m in enumerate(memories):
        for link in LINKS:
            target = getattr(m, link)
            if target == m.id:
                raise ValidationFailed(f"memories[{i}].{link} names the memory itself")
            if target is not None and target not in index:
                raise ValidationFailed(f"memories[{i}].{link} names no memory of the document ({target})")
    for link in LINKS:
        _check_acyclic(memories, index, link)


def _check_acyclic(memories: Sequence[ExportedMemory], index: dict[uuid.UUID, int], link: str) -> None:
    # Each memory has at most one link of a kind, so each walk is a path; one that meets itself is a cycle.
    done: set[uuid.UUID] = set()
    for start in memories:
        walk: set[uuid.UUID] = set()
        node: uuid.UUID | None = start.id
        while node is not None and node not in done and node not in walk:
            walk.add(node)
            node = getattr(memories[index[node]], link)
        if node is not None and node in walk:
            raise ValidationFailed(f"memories[{index[node]}].{link} forms a cycle")
        done |= walk


def check_events(doc: ExportDocument, now: datetime | None = None) -> None:
    """Known kinds, no future times, and each event about a memory of the document and of its user."""
    latest = (now or datetime.now(UTC)) + CLOCK_SKEW
    users = {m.id: m.user_id for m in doc.memories}
    for e in doc.events:
        if e.kind == EventKind.ERASED and e.memory_id is not None:
            users.setdefault(e.memory_id, e.user_id)
    for i, e in enumerate(doc.events):
        where = f"events[{i}]"
        if e.kind not in _KINDS:
            raise ValidationFailed(f"{where}.kind: unknown event kind {e.kind!r}")
        if e.created_at > latest:
            raise ValidationFailed(f"{where}.created_at is in the future")
        if e.memory_id is None:
            continue
        owner = users.get(e.memory_id)
        if owner is None:
            raise ValidationFailed(f"{where}.memory_id names no memory of the document ({e.memory_id})")
        if owner != e.user_id:
            raise ValidationFailed(f"{where}.user_id is not the user of its memory")


def imported_details(e: ExportedEvent) -> dict[str, Any]:
    """The details an imported event is stored with: the claimed actor kept, not trusted."""
    return {"original_actor": e.actor, **e.details}
