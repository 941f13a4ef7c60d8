"""Export: every memory of a scope (any status, with its vector), its events and proposals.

Stored text was redacted on the way in; it is redacted again on the way out (defence in depth: a row
written before a redaction rule existed, or by a path that forgot, still leaves clean).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from app.db.models import DreamProposal, Memory, MemoryEvent
from app.lib.redaction import redact, redact_value
from app.portability.document import (
    FORMAT_VERSION,
    ExportDocument,
    ExportedEvent,
    ExportedMemory,
    ExportedProposal,
)
from app.store.portability import PortabilityStore
from app.vocabulary import (
    ProposalKind,
    ProposalStatus,
)


def _text(value: str | None) -> str | None:
    return None if value is None else redact(value).text


def _details(value: dict[str, Any]) -> dict[str, Any]:
    cleaned = redact_value(value)
    return cleaned if isinstance(cleaned, dict) else {}


# Text a memory's export carries passes redaction again; the vector is written as plain floats.
_CLEANED = frozenset({"subject", "content", "summary", "tags", "embedding"})


def exported_memory(m: Memory) -> ExportedMemory:
    kept = {name: getattr(m, name) for name in ExportedMemory.__struct_fields__ if name not in _CLEANED}
    return ExportedMemory(
        **kept,
        subject=_text(m.subject),
        content=redact(m.content).text,
        summary=_text(m.summary),
        tags=[redact(t).text for t in m.tags],
        embedding=None if m.embedding is None else [float(x) for x in m.embedding],
    )


def exported_event(e: MemoryEvent) -> ExportedEvent:
    return ExportedEvent(
        id=e.id,
        memory_id=e.memory_id,
        user_id=e.user_id,
        project_id=e.project_id,
        kind=e.kind,
        actor=e.actor,
        reason=_text(e.reason),
        details=_details(e.details),
        created_at=e.created_at,
    )


def exported_proposal(p: DreamProposal) -> ExportedProposal:
    return ExportedProposal(
        id=p.id,
        user_id=p.user_id,
        project_id=p.project_id,
        kind=ProposalKind(p.kind),
        target_ids=list(p.target_ids),
        payload=_details(p.payload),
        rationale=_text(p.rationale),
        status=ProposalStatus(p.status),
        model=p.model,
        created_at=p.created_at,
        decided_at=p.decided_at,
        applied_at=p.applied_at,
    )


async def export_document(
    repo: PortabilityStore,
    *,
    user_id: str | None,
    project_id: str | None,
    embed_model: str,
    now: datetime,
) -> ExportDocument:
    """The JSON export of one user (or project of a user), or of the whole tenant."""
    return ExportDocument(
        version=FORMAT_VERSION,
        exported_at=now,
        embed_model=embed_model,
        user_id=user_id,
        project_id=project_id,
        memories=[exported_memory(m) for m in await repo.memories(user_id, project_id)],
        events=[exported_event(e) for e in await repo.events(user_id, project_id)],
        proposals=[exported_proposal(p) for p in await repo.proposals(user_id, project_id)],
    )
