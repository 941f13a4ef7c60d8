"""How recall combines its two halves' raw scores (cosine, BM25) into two score components.

Pure functions over one recall's candidates, since two of the three need the whole set:

- `weighted` (Engram's original): the cosine, and the BM25 saturated to [0, 1) by `rank / (rank + s)`.
- `normalised`: the cosine, and the BM25 divided by the best BM25 among the query's candidates, so the
  best keyword match of every query scores 1 whatever its raw scale (BM25 is unbounded and its scale
  moves with the scope's size and the query's length).
- `minmax`: both halves min-max scaled over the query's candidates: the BM25 as `normalised` does (its
  minimum is 0, a candidate the text did not match), and the cosine from the embedder's relevance floor
  (0; "not about the query at all"), or the lowest candidate's if that is lower, to the best's (1). A
  small embedder's cosines crowd into a narrow band (all-MiniLM-L6-v2: a question's candidates mostly
  within 0.1-0.6), so the raw cosine beside a [0, 1] keyword share let the keyword half decide almost
  every order; scaled alike, each half has the same say. The floor keeps a small scope's few, equally
  relevant memories from being spread over the whole range by a difference of a hundredth.
- `rrf`: reciprocal-rank fusion, each half's share `(k + 1) / (k + rank)` (1 for a half's first row, 0
  for a row the half did not find), so only the order within each half counts.

A long memory is ranked by its whole vector and its best passage's BM25; `best_unit` chooses the passage its
line may show.

`scoring.score` weighs the two components (`RankingPolicy.relevance_weights`) with Engram's others
(recency, salience, importance, ...). docs/RANKING.md has the measurements behind the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.lib.ranking import Fusion


@dataclass(slots=True)
class Relevance:  # one per candidate per recall: not frozen, as recall's other per-candidate values
    """One candidate's two relevance components, on its fusion's scale ([0, 1] each)."""

    semantic: float
    keyword: float


def clamp(cosine: float | None) -> float:
    return max(0.0, min(1.0, cosine)) if cosine is not None else 0.0


def saturate(rank: float, saturation: float) -> float:
    """Map an unbounded text rank to [0, 1) so one keyword hit is comparable across queries."""
    if rank <= 0:
        return 0.0
    return rank / (rank + saturation)


def cosine_range(cosines: Sequence[float | None], floor: float | None = None) -> tuple[float, float]:
    """`minmax`'s bounds: the lowest clamped cosine among the candidates that have one (or `floor`, if
    lower), and the highest ((0, 0) for none)."""
    present = [clamp(c) for c in cosines if c is not None]
    if not present:
        return (0.0, 0.0)
    low = min(present) if floor is None else min(min(present), clamp(floor))
    return (low, max(present))


def cosine_bounds(
    fusion: Fusion, cosines: Sequence[float | None], floor: float | None = None
) -> tuple[float, float]:
    """The range a fusion's semantic share maps onto [0, 1]: `minmax`'s (`cosine_range`); the others
    take the clamped cosine as it is, (0, 1). A long memory's passages are weighed on the same scale."""
    return cosine_range(cosines, floor) if fusion is Fusion.MINMAX else (0.0, 1.0)


def scaled(cosine: float, present: bool, bounds: tuple[float, float]) -> float:
    """A clamped cosine min-max scaled to `bounds`; a lone or all-equal positive cosine is the best (1), a
    row without a comparable vector has none (0)."""
    low, high = bounds
    if not present:
        return 0.0
    if high > low:
        return (cosine - low) / (high - low)
    return 1.0 if cosine > 0 else 0.0


def ranks(values: Sequence[float]) -> list[int | None]:
    """1-based rank of each positive value, best first (equal values share the better rank); None for
    values <= 0, which the half did not find."""
    order = sorted((v for v in values if v > 0), reverse=True)
    first: dict[float, int] = {}
    for position, value in enumerate(order, start=1):
        first.setdefault(value, position)
    return [first[v] if v > 0 else None for v in values]


def reciprocal(rank: int | None, k: int) -> float:
    """A half's RRF share, scaled so its first row gets 1."""
    return 0.0 if rank is None else (k + 1) / (k + rank)


def fuse(
    cosines: Sequence[float | None],
    bm25: Sequence[float],
    fusion: Fusion,
    *,
    saturation: float,
    rrf_k: int = 60,
    cosine_floor: float | None = None,
) -> list[Relevance]:
    """The relevance components of each candidate (the two sequences are aligned). `cosine_floor`: the
    cosine `minmax` counts 0 at, unless a candidate's is lower (None: the lowest candidate's)."""
    if fusion is Fusion.WEIGHTED:
        return [Relevance(clamp(c), saturate(r, saturation)) for c, r in zip(cosines, bm25, strict=True)]
    if fusion in (Fusion.NORMALISED, Fusion.MINMAX):
        best = max((r for r in bm25 if r > 0), default=0.0)
        shares = [r / best if best > 0 and r > 0 else 0.0 for r in bm25]
        cosine = [clamp(c) for c in cosines]
        if fusion is Fusion.MINMAX:
            bounds = cosine_bounds(fusion, cosines, cosine_floor)
            cosine = [scaled(s, c is not None, bounds) for s, c in zip(cosine, cosines, strict=True)]
        return [Relevance(s, k) for s, k in zip(cosine, shares, strict=True)]
    semantic = ranks([c if c is not None else 0.0 for c in cosines])
    keyword = ranks(bm25)
    return [
        Relevance(reciprocal(s, rrf_k), reciprocal(w, rrf_k)) for s, w in zip(semantic, keyword, strict=True)
    ]


def best_unit(
    units: Sequence[tuple[float | None, float]],
    best_bm25: float,
    weights: tuple[float, float],
    cosine_span: float = 1.0,
) -> int:
    """Which of a long memory's passages (their cosine and BM25) its line may show: the highest weighted
    sum of the cosine over `cosine_span` (the candidates' cosine range under `minmax`, else 1) and the
    BM25 over the query's best (`best_bm25`), as the fusion weighs a candidate; the first of equals.
    `units` must not be empty."""
    w_semantic, w_keyword = weights
    per_bm25 = w_keyword / best_bm25 if best_bm25 > 0 else 0.0
    per_cosine = w_semantic / cosine_span if cosine_span > 0 else w_semantic
    best, best_value = 0, -1.0
    for index, (cosine, bm25) in enumerate(units):
        value = per_cosine * clamp(cosine) + per_bm25 * bm25
        if value > best_value:
            best, best_value = index, value
    return best
