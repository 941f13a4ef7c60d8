"""CandidateRow.of passes a candidate statement's columns by position: each field must get the column of
its own name, whatever order the fields are declared in. And the line a
candidate renders is its own, however recall remembers the parts it repeats."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

from app.lib.ranking import RankingPolicy
from app.lib.settings import ScoringWeights
from app.lib.tokens import TokenCounter, content_tokens
from app.memory.candidate_set import Candidates
from app.memory.models import RecallInput
from app.memory.slots import content_hash
from app.store.candidates import CandidateRow, PassageRow
from app.vocabulary import MemoryStatus, MemoryType, Privacy

# The fields `of` derives rather than copies, and the column each comes from.
DERIVED = {"cosine": "cosine", "keyword_rank": "rank", "keyword_ideal": "ideal"}


def _row(**overrides: object) -> dict[str, object]:
    """A candidate row with a distinct value in every column a field reads."""
    names = [f.name for f in dataclasses.fields(CandidateRow) if f.name not in ("columns", "passage_scores")]
    row: dict[str, object] = {DERIVED.get(name, name): f"value of {name}" for name in names}
    row.update(cosine=0.25, rank=3.5, ideal=7.0, p_ordinals=None)
    row.update(overrides)
    return row


def test_each_copied_field_gets_its_own_column() -> None:
    row = _row()
    candidate = CandidateRow.of(row)  # type: ignore[arg-type]
    for field in dataclasses.fields(CandidateRow):
        if field.name in DERIVED or field.name in ("columns", "passage_scores"):
            continue
        assert getattr(candidate, field.name) == f"value of {field.name}", field.name
    assert (candidate.cosine, candidate.keyword_rank, candidate.keyword_ideal) == (0.25, 3.5, 7.0)
    assert candidate.columns is row
    assert candidate.passages == ()


def test_missing_scores_read_as_none_and_zero() -> None:
    candidate = CandidateRow.of(_row(cosine=None, rank=None, ideal=None))  # type: ignore[arg-type]
    assert (candidate.cosine, candidate.keyword_rank, candidate.keyword_ideal) == (None, 0.0, 0.0)


def test_passages_come_with_their_matched_ranks() -> None:
    row = _row(
        p_ordinals=[0, 1],
        p_starts=[0, 40],
        p_ends=[40, 90],
        p_tokens=[9, 11],
        p_cosines=[0.5, None],
        p_matched=[1],
        p_matched_ranks=[2.5],
    )
    candidate = CandidateRow.of(row)  # type: ignore[arg-type]
    assert candidate.passages == (PassageRow(0, 0, 40, 9, 0.5, 0.0), PassageRow(1, 40, 90, 11, None, 2.5))


def _candidate(subject: str, content: str, status: MemoryStatus = MemoryStatus.ACTIVE) -> CandidateRow:
    when = datetime(2026, 3, 1, tzinfo=UTC)
    return CandidateRow(
        uuid.uuid4(), MemoryType.FACT, subject, content, status, 0.5, 0.5, 0.9, Privacy.PUBLIC, None, when,
        None, content_hash(content), content_tokens(content), 0.4, 0.0,
        {"valid_to": when if status == MemoryStatus.SUPERSEDED else None},  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_remembered_prefix_is_the_one_its_memory_renders() -> None:
    """Recall keeps prefixes by type, subject and content digest (the label reads the content's words):
    each line still shows what `line_prefix` makes of its own memory, seen once or again."""
    rows = [
        _candidate("home city", "I live in Porto (home city)."),  # names its subject: no label
        _candidate("home city", "I moved to Lisbon last spring."),  # the same slot, another text
        _candidate("home city", "i live in  PORTO (home city)"),  # the first one's digest
        _candidate("home city", "I moved to Lisbon last spring.", MemoryStatus.SUPERSEDED),
    ]
    now = datetime(2026, 3, 2, tzinfo=UTC)
    for _ in range(2):  # the second pass reads what the first remembered
        candidates = Candidates(
            RecallInput(user_id="u", query="where do I live"),
            RankingPolicy(weights=ScoringWeights()),
            TokenCounter(),
            now,
        )
        candidates.add(rows)
        lines = {item.ref.content: item.text() for item in candidates.items() if not item.ref.superseded}
        assert lines == {
            "I live in Porto (home city).": "- I live in Porto (home city).",
            "I moved to Lisbon last spring.": "- [home city] I moved to Lisbon last spring.",
            "i live in  PORTO (home city)": "- i live in PORTO (home city)",
        }
        superseded = [item.text() for item in candidates.items() if item.ref.superseded]
        assert superseded == ["- [home city] (superseded 1 Mar 2026) I moved to Lisbon last spring."]
