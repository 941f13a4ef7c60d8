"""The export document: one versioned msgspec schema, written by export and read back by import.

Decoding is strict (no string-to-number coercion, unknown fields refused), so a bad document fails on
its first bad field with that field's path, before anything is written.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from app.lib.errors import ValidationFailed
from app.lib.jsonbody import DEFAULT_MAX_JSON_DEPTH, decode_strict
from app.lib.validation import check_time
from app.portability.integrity import check_events, check_links
from app.vocabulary import (
    MemoryStatus,
    MemoryType,
    Privacy,
    ProposalKind,
    ProposalStatus,
    Source,
)

FORMAT_VERSION: Literal[1] = 1
FLOAT32_MAX = 3.4028234663852886e38
NO_NUL = r"^[^\x00]*$"
Ident = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=NO_NUL)]
Text = Annotated[str, msgspec.Meta(pattern=NO_NUL)]
Tag = Annotated[str, msgspec.Meta(max_length=100, pattern=NO_NUL)]
When = Annotated[datetime, msgspec.Meta(tz=True)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Count = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
Digest = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
Vector = Annotated[list[float], msgspec.Meta(min_length=1, max_length=16000)]
# Caps on every list; the body limit (ENGRAM_MAX_IMPORT_BYTES) binds first in practice. Tags are capped
# above the API's 50 so that memories stored before that cap still move.
Tags = Annotated[list[Tag], msgspec.Meta(max_length=1000)]
Ids = Annotated[list[uuid.UUID], msgspec.Meta(max_length=1000)]
EventKindName = Annotated[str, msgspec.Meta(min_length=1, max_length=32, pattern=r"^[a-z][a-z_]*$")]


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class ExportedMemory(_Strict, kw_only=True):
    """A memory with everything needed to restore it: status, links, timestamps and its vector."""

    id: uuid.UUID
    user_id: Ident
    project_id: Ident | None = None
    session_id: Ident | None = None
    type: MemoryType
    subject: Ident | None = None
    content: Text
    summary: Text | None = None
    status: MemoryStatus
    importance: Unit = 0.5
    salience: Unit = 1.0
    confidence: Unit = 0.8
    privacy: Privacy = Privacy.PUBLIC
    tags: Tags = msgspec.field(default_factory=list)
    created_at: When | None = None
    updated_at: When | None = None
    valid_from: When | None = None
    valid_to: When | None = None
    expires_at: When | None = None
    last_accessed_at: When | None = None
    access_count: Count = 0
    supersedes: uuid.UUID | None = None
    superseded_by: uuid.UUID | None = None
    source: Source = Source.API
    source_model: Ident | None = None
    source_message_id: uuid.UUID | None = None
    embed_model: Ident | None = None
    embedding: Vector | None = None
    content_hash: Digest | None = None  # informational: import recomputes it from the (redacted) content
    agent_id: Ident | None = None  # private to this agent (absent: the user's own)


class ExportedEvent(_Strict, kw_only=True):
    id: int | None = None  # informational: import assigns new ids
    memory_id: uuid.UUID | None = None
    user_id: Ident
    project_id: Ident | None = None
    kind: EventKindName  # a string, not the enum: the audit log may hold kinds added after this version
    actor: Ident
    reason: Text | None = None
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    created_at: When


class ExportedProposal(_Strict, kw_only=True):
    id: uuid.UUID
    user_id: Ident
    project_id: Ident | None = None
    kind: ProposalKind
    target_ids: Ids
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    rationale: Text | None = None
    status: ProposalStatus
    model: Ident | None = None
    created_at: When
    decided_at: When | None = None
    applied_at: When | None = None


class ExportDocument(_Strict, kw_only=True):
    version: Literal[1]
    exported_at: When
    embed_model: str | None = None
    user_id: str | None = None
    project_id: str | None = None
    memories: Annotated[list[ExportedMemory], msgspec.Meta(max_length=1_000_000)]
    events: Annotated[list[ExportedEvent], msgspec.Meta(max_length=10_000_000)] = msgspec.field(
        default_factory=list
    )
    proposals: Annotated[list[ExportedProposal], msgspec.Meta(max_length=1_000_000)] = msgspec.field(
        default_factory=list
    )


def parse_document(raw: bytes, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> ExportDocument:
    """Decode an export; a schema violation is a 422 naming the first bad field (`memories[3].type`),
    unreadable or too deeply nested JSON a 400."""
    document: ExportDocument = decode_strict(raw, ExportDocument, max_depth=max_depth)
    return document


def encode_document(doc: ExportDocument) -> bytes:
    return msgspec.json.encode(doc)


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _check_vector(where: str, vector: list[float], model: str | None, current: str, dim: int) -> None:
    # pgvector stores float32: a larger finite value (1e308) fails in the INSERT, as a 500.
    if not all(math.isfinite(x) and abs(x) <= FLOAT32_MAX for x in vector) or not any(vector):
        raise ValidationFailed(
            f"{where}.embedding must hold float32 numbers (|x| <= {FLOAT32_MAX:.4g}), not all zeros"
        )
    if model == current and len(vector) != dim:
        raise ValidationFailed(
            f"{where}.embedding has {len(vector)} dimensions; {current} vectors have {dim}"
        )


def _check_memory(where: str, m: ExportedMemory, max_chars: int, current: str, dim: int) -> None:
    if not m.user_id.strip():
        raise ValidationFailed(f"{where}.user_id must not be empty")
    if not m.content.strip():
        raise ValidationFailed(f"{where}.content must not be empty")
    if len(m.content) > max_chars:
        raise ValidationFailed(f"{where}.content is longer than {max_chars} characters")
    for name in ("created_at", "updated_at", "valid_from", "valid_to", "expires_at", "last_accessed_at"):
        check_time(f"{where}.{name}", getattr(m, name))
    if m.embedding is not None:
        _check_vector(where, m.embedding, m.embed_model, current, dim)


def check_document(
    doc: ExportDocument, *, max_chars: int, embed_model: str, dim: int, now: datetime | None = None
) -> None:
    """What the schema cannot say: unique ids, lengths, time ranges, vector shape, NUL inside JSON,
    links and events that hold together (`integrity`)."""
    seen: dict[uuid.UUID, int] = {}
    for i, m in enumerate(doc.memories):
        where = f"memories[{i}]"
        if m.id in seen:
            raise ValidationFailed(f"{where}.id duplicates memories[{seen[m.id]}].id")
        seen[m.id] = i
        _check_memory(where, m, max_chars, embed_model, dim)
    check_links(doc.memories)
    check_events(doc, now)
    for i, e in enumerate(doc.events):
        check_time(f"events[{i}].created_at", e.created_at)
        if _has_nul(e.details):
            raise ValidationFailed(f"events[{i}].details must not contain NUL characters")
    proposals: dict[uuid.UUID, int] = {}
    for i, p in enumerate(doc.proposals):
        if p.id in proposals:
            raise ValidationFailed(f"proposals[{i}].id duplicates proposals[{proposals[p.id]}].id")
        proposals[p.id] = i
        if not p.target_ids:
            raise ValidationFailed(f"proposals[{i}].target_ids must not be empty")
        if _has_nul(p.payload):
            raise ValidationFailed(f"proposals[{i}].payload must not contain NUL characters")
        for name in ("created_at", "decided_at", "applied_at"):
            check_time(f"proposals[{i}].{name}", getattr(p, name))
