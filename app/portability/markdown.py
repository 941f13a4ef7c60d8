"""The Markdown export: what a person reads. Grouped by user and type; current memories first, pinned
ones marked, superseded ones struck through with their successor, other retired ones labelled."""

from __future__ import annotations

import uuid
from collections import defaultdict

from app.portability.document import ExportDocument, ExportedMemory
from app.vocabulary import MemoryStatus, MemoryType

_ORDER = {
    MemoryStatus.PINNED: 0,
    MemoryStatus.ACTIVE: 1,
    MemoryStatus.SUPERSEDED: 2,
    MemoryStatus.ARCHIVED: 3,
    MemoryStatus.EXPIRED: 4,
    MemoryStatus.FORGOTTEN: 5,
}


def _inline(text: str) -> str:
    """One line of text; a `~~` inside content must not open or close a strike-through."""
    return " ".join(text.split()).replace("~~", "\\~\\~")


def _notes(m: ExportedMemory) -> str:
    notes: list[str] = []
    if m.subject:
        notes.append(f"subject: {_inline(m.subject)}")
    if m.project_id:
        notes.append(f"project: {_inline(m.project_id)}")
    if m.valid_from is not None:
        notes.append(f"since {m.valid_from.date().isoformat()}")
    if m.status in (MemoryStatus.ARCHIVED, MemoryStatus.EXPIRED, MemoryStatus.FORGOTTEN):
        notes.append(str(m.status))
    if m.privacy != "public":
        notes.append(str(m.privacy))
    if m.tags:
        notes.append("tags: " + ", ".join(_inline(t) for t in m.tags))
    return f" _({'; '.join(notes)})_" if notes else ""


def _line(m: ExportedMemory, by_id: dict[uuid.UUID, ExportedMemory]) -> str:
    content = _inline(m.content)
    if m.status == MemoryStatus.SUPERSEDED:
        successor = by_id.get(m.superseded_by) if m.superseded_by else None
        target = _inline(successor.content) if successor else f"memory {m.superseded_by or 'unknown'}"
        until = f" (until {m.valid_to.date().isoformat()})" if m.valid_to else ""
        return f"- ~~{content}~~ -> {target}{until}{_notes(m)}"
    marker = "**pinned** " if m.status == MemoryStatus.PINNED else ""
    return f"- {marker}{content}{_notes(m)}"


def render_markdown(doc: ExportDocument) -> str:
    """The whole document as Markdown (vectors, events and proposals are left to the JSON export)."""
    by_id = {m.id: m for m in doc.memories}
    users: dict[str, dict[str, list[ExportedMemory]]] = defaultdict(lambda: defaultdict(list))
    for m in doc.memories:
        users[m.user_id][m.type].append(m)
    scope = f" for user {_inline(doc.user_id)}" if doc.user_id else ""
    lines = [
        f"# Engram memories{scope}",
        "",
        f"Exported {doc.exported_at.strftime('%Y-%m-%d %H:%M UTC')}; {len(doc.memories)} memories; "
        "**pinned** = always recalled; ~~struck through~~ = superseded (-> its successor).",
    ]
    for user_id in sorted(users):
        lines += ["", f"## {_inline(user_id)}"]
        for mtype in MemoryType:
            group = users[user_id].get(mtype)
            if not group:
                continue
            group.sort(key=lambda m: (_ORDER[m.status], -(m.valid_from.timestamp() if m.valid_from else 0)))
            lines += ["", f"### {mtype} ({len(group)})", ""]
            lines += [_line(m, by_id) for m in group]
    return "\n".join(lines) + "\n"
