"""Which candidate plan keeps cosine ranking exact and fast for a scope (DESIGN.md, read path step 2).

An exact scan of a scope's rows is exact by construction and fast while the scope is small. HNSW is
fast for large scopes, but filtered HNSW only stays close to exact when the scope is a sizeable share
of the index: with a tiny share, the graph walk must pass over thousands of other tenants' vectors
and can stop before it finds the scope's nearest ones. So HNSW needs both a large scope and a
sufficient share of the table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PlanInput:
    scope_rows: int  # live rows in scope, counted up to exact_max + 1
    table_rows: float  # the planner's estimate of all rows (pg_class.reltuples; -1 when never analysed)
    exact_max: int
    min_share: float


def use_hnsw(p: PlanInput) -> bool:
    """True when the per-model HNSW index should answer instead of an exact scan."""
    if p.scope_rows <= p.exact_max:
        return False
    if p.table_rows <= 0:
        return True  # unknown table size: the scope alone is large
    return p.scope_rows / max(p.table_rows, p.scope_rows) >= p.min_share
