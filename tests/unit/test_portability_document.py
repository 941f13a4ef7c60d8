"""The export document's schema and checks, and the Markdown rendering: pure, no database."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from app.lib.errors import BadRequest, ValidationFailed
from app.portability.document import (
    ExportDocument,
    ExportedMemory,
    check_document,
    encode_document,
    parse_document,
)
from app.portability.markdown import render_markdown
from app.vocabulary import MemoryStatus, MemoryType

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def memory(content: str, **extra: Any) -> dict[str, Any]:
    base = {"id": str(uuid.uuid4()), "user_id": "u", "type": "fact", "status": "active", "content": content}
    return base | extra


def raw(*memories: dict[str, Any], **extra: Any) -> bytes:
    doc = {"version": 1, "exported_at": NOW.isoformat(), "memories": list(memories)} | extra
    return json.dumps(doc).encode()


def check(doc: ExportDocument, dim: int = 3) -> None:
    check_document(doc, max_chars=100, embed_model="model-a", dim=dim)


def test_a_minimal_document_parses_with_defaults_and_round_trips() -> None:
    doc = parse_document(raw(memory("likes tea")))
    [m] = doc.memories
    assert (m.type, m.status, m.privacy, m.importance, m.tags, m.embedding) == (
        MemoryType.FACT,
        MemoryStatus.ACTIVE,
        "public",
        0.5,
        [],
        None,
    )
    assert parse_document(encode_document(doc)) == doc


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (raw(memory("x", type="gossip")), "memories[0].type: Invalid enum value"),
        (raw(memory("x"), memory("y", importance=2)), "memories[1].importance: Expected `float` <= 1.0"),
        (raw(memory("x", importance="0.5")), "memories[0].importance: Expected `float`, got `str`"),
        (raw(memory("x", colour=1)), "memories[0]: Object contains unknown field `colour`"),
        (raw(memory("x"), version=2), "version: Invalid enum value 2"),
        (raw(memory("x", created_at="2026-01-01T00:00:00")), "memories[0].created_at"),
        (b"[]", "Expected `object`, got `array`"),
    ],
)
def test_schema_errors_name_the_first_bad_field(document: bytes, message: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_document(document)
    assert message in caught.value.detail


def test_a_refused_enum_value_is_not_repeated() -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_document(raw(memory("x", type="gossip")))
    assert "gossip" not in caught.value.detail


def test_malformed_json_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        parse_document(b'{"version": 1, "memories": [')


@pytest.mark.parametrize(
    ("memories", "message"),
    [
        (
            [memory("x", embedding=[0.1, 0.2], embed_model="model-a")],
            "memories[0].embedding has 2 dimensions",
        ),
        (
            [memory("x", embedding=[0.0, 0.0, 0.0], embed_model="model-a")],
            "memories[0].embedding must hold float32 numbers",
        ),
        ([memory("  ")], "memories[0].content must not be empty"),
        ([memory("x" * 101)], "memories[0].content is longer than 100"),
        ([memory("x", valid_from="1900-01-01T00:00:00Z")], "memories[0].valid_from must be between"),
    ],
)
def test_checks_beyond_the_schema(memories: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        check(parse_document(raw(*memories)))
    assert message in caught.value.detail


def test_duplicate_ids_and_nul_in_json_are_refused() -> None:
    first = memory("x")
    with pytest.raises(ValidationFailed, match=r"memories\[1\]\.id duplicates memories\[0\]\.id"):
        check(parse_document(raw(first, {**first, "content": "y"})))
    event = {"user_id": "u", "kind": "created", "actor": "a", "created_at": NOW.isoformat()}
    with pytest.raises(ValidationFailed, match=r"events\[0\]\.details"):
        check(parse_document(raw(first, events=[{**event, "details": {"a": {"b": "c\x00"}}}])))


def test_another_models_vector_may_have_any_dimension() -> None:
    check(parse_document(raw(memory("x", embedding=[0.5] * 7, embed_model="model-b"))))


def _exported(content: str, **extra: Any) -> ExportedMemory:
    fields: dict[str, Any] = {"type": MemoryType.DECISION, "status": MemoryStatus.ACTIVE, "valid_from": NOW}
    return ExportedMemory(id=uuid.uuid4(), user_id="u", content=content, **(fields | extra))


def test_markdown_strikes_superseded_memories_through_with_their_successor() -> None:
    new = _exported("Use Svelte")
    old = _exported(
        "Use React ~~really~~", status=MemoryStatus.SUPERSEDED, superseded_by=new.id, valid_to=NOW
    )
    lost = _exported("Use Angular", status=MemoryStatus.SUPERSEDED, superseded_by=uuid.uuid4())
    pinned = _exported("Name is Ada", type=MemoryType.IDENTITY, status=MemoryStatus.PINNED)
    gone = _exported("Lived in Rome", type=MemoryType.FACT, status=MemoryStatus.FORGOTTEN, privacy="private")
    doc = ExportDocument(version=1, exported_at=NOW, user_id="u", memories=[old, lost, new, pinned, gone])
    md = render_markdown(doc)
    lines = md.splitlines()
    assert lines[0] == "# Engram memories for user u"
    assert lines.index("### identity (1)") < lines.index("### fact (1)") < lines.index("### decision (3)")
    decisions = lines[lines.index("### decision (3)") + 2 :]
    assert decisions[0].startswith("- Use Svelte _(")  # current first
    assert decisions[1].startswith(r"- ~~Use React \~\~really\~\~~~ -> Use Svelte (until 2026-05-01)")
    assert decisions[2].startswith(f"- ~~Use Angular~~ -> memory {lost.superseded_by}")
    assert "- **pinned** Name is Ada" in md
    assert any(line.startswith("- Lived in Rome _(") and "forgotten; private)_" in line for line in lines)
