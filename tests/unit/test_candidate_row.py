"""CandidateRow.of passes a candidate statement's columns by position: each field must get the column of
its own name, whatever order the fields are declared in."""

from __future__ import annotations

import dataclasses

from app.store.candidates import CandidateRow, PassageRow

# The fields `of` derives rather than copies, and the column each comes from.
DERIVED = {"cosine": "cosine", "keyword_rank": "rank", "keyword_ideal": "ideal"}


def _row(**overrides: object) -> dict[str, object]:
    """A candidate row with a distinct value in every column a field reads."""
    names = [f.name for f in dataclasses.fields(CandidateRow) if f.name not in ("columns", "passages")]
    row: dict[str, object] = {DERIVED.get(name, name): f"value of {name}" for name in names}
    row.update(cosine=0.25, rank=3.5, ideal=7.0, p_ordinals=None)
    row.update(overrides)
    return row


def test_each_copied_field_gets_its_own_column() -> None:
    row = _row()
    candidate = CandidateRow.of(row)  # type: ignore[arg-type]
    for field in dataclasses.fields(CandidateRow):
        if field.name in DERIVED or field.name in ("columns", "passages"):
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
