"""The candidate plan: exact scans unless the scope is large and a sizeable share of the table."""

from __future__ import annotations

import pytest

from app.store.plan import PlanInput, use_hnsw


@pytest.mark.parametrize(
    ("scope_rows", "table_rows", "expected"),
    [
        (10, 1_000_000, False),  # small scope: exact, whatever the table
        (5_000, 1_000_000, False),  # at the limit: still exact
        (5_001, 1_000_000, False),  # large but 0.5% of the table: filtered HNSW would miss rows
        (30_000, 1_000_000, True),  # large and 3% of the table
        (100_000, 100_000, True),  # one user is the whole table
        (6_000, -1, True),  # never analysed: the scope alone decides
    ],
)
def test_hnsw_only_for_large_scopes_that_are_a_sizeable_share(
    scope_rows: int, table_rows: float, expected: bool
) -> None:
    assert use_hnsw(PlanInput(scope_rows, table_rows, exact_max=5_000, min_share=0.02)) is expected
