"""What a relevance floor would keep and drop, from the candidates of a recall without floor or budget.

For each question the quality bench records (`relevance_signals`), under every candidate quantity the
floor could compare, the best value among the recall's candidates that the floor applies to (not the
standing memories, which enter below it within their share), and the best value among the candidates
that hold the question's evidence. `bench.calibrate_floor` sweeps floors over them:

- an unanswerable question (LoCoMo's adversarial, BEAM's abstention, the synthetic "nothing known")
  abstains at floor f when its best value is below f (and no standing memory enters);
- an answerable question is dropped at f when every candidate holding its evidence is below f (its
  evidence can no longer reach the context), and empties when its best value is below f.

The quantities (`cosine`, `bm25` and `coverage` are the trace's components, app.memory.scoring):
- `similarity`: max(cosine, keyword coverage, bm25 / (bm25 + 2));
- `coverage`: max(cosine, keyword coverage);
- `saturated`: max(cosine, bm25 / (bm25 + 2)), the floor's value (app.memory.similarity for a question);
- `cosine`: the cosine alone;
- `mean`: (cosine + coverage) / 2;
- `fused`: (cosine + bm25 / the question's best bm25) / 2, recall's ranking relevance rescaled to [0, 1].
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from app.memory.similarity import query_keyword

SATURATION = 2.0  # ENGRAM_KEYWORD_SATURATION's default, what `saturated` used


class Candidate(Protocol):
    @property
    def standing(self) -> bool: ...
    @property
    def turns(self) -> list[str]: ...
    @property
    def cosine(self) -> float: ...
    @property
    def coverage(self) -> float: ...
    @property
    def bm25(self) -> float: ...


def _quantities(best_bm25: float) -> dict[str, Callable[[Candidate], float]]:
    return {
        "similarity": lambda c: max(c.cosine, c.coverage, _saturated(c.bm25)),
        "coverage": lambda c: max(c.cosine, c.coverage),
        "saturated": lambda c: max(c.cosine, _saturated(c.bm25)),
        "cosine": lambda c: c.cosine,
        "mean": lambda c: (c.cosine + c.coverage) / 2,
        "fused": lambda c: (c.cosine + (c.bm25 / best_bm25 if best_bm25 > 0 else 0.0)) / 2,
    }


QUANTITIES = tuple(_quantities(1.0))


def _saturated(bm25: float) -> float:
    return query_keyword(bm25, SATURATION)


def relevance_signals(candidates: Sequence[Candidate], evidence: Iterable[str]) -> dict[str, Any]:
    """The best value of each quantity over the floored candidates, and over those holding evidence."""
    gold = set(evidence)
    floored = [c for c in candidates if not c.standing]
    quantities = _quantities(max((c.bm25 for c in candidates), default=0.0))
    holding = [c for c in floored if gold & set(c.turns)]
    return {
        "standing": any(c.standing for c in candidates),
        "best": {name: round(max(map(f, floored), default=0.0), 4) for name, f in quantities.items()},
        "evidence": (
            {name: round(max(map(f, holding)), 4) for name, f in quantities.items()} if holding else None
        ),
    }


def sweep(
    rows: Sequence[Mapping[str, Any]], quantity: str, floors: Sequence[float]
) -> list[dict[str, float | int]]:
    """Per floor: answerable questions whose evidence it drops and that it empties, unanswerable ones
    that abstain (shares of the questions that have signals)."""
    answerable = [r["signals"] for r in rows if r["group"] == "main" and r["signals"]["evidence"] is not None]
    unanswerable = [r["signals"] for r in rows if r["group"] in ("adversarial", "abstention")]
    out: list[dict[str, float | int]] = []
    for floor in floors:
        dropped = sum(s["evidence"][quantity] < floor for s in answerable)
        emptied = sum(s["best"][quantity] < floor for s in answerable)
        abstained = sum(s["best"][quantity] < floor for s in unanswerable)
        abstained_all = sum(s["best"][quantity] < floor and not s["standing"] for s in unanswerable)
        out.append(
            {
                "floor": floor,
                "answerable": len(answerable),
                "dropped": _share(dropped, len(answerable)),
                "emptied": _share(emptied, len(answerable)),
                "unanswerable": len(unanswerable),
                "abstained": _share(abstained, len(unanswerable)),
                "abstained_with_standing": _share(abstained_all, len(unanswerable)),
            }
        )
    return out


def choose(curve: Sequence[Mapping[str, float | int]], max_dropped: float) -> float:
    """Among the floors that drop the evidence of at most `max_dropped` of the answerable questions, the
    one with the most unanswerable questions abstaining (standing memories counted: a question that gets
    one does not abstain) less answerable questions dropped, counted in questions; the lowest on a tie.
    A step up is worth it only while it makes more questions abstain than it drops."""
    kept = [p for p in curve if p["dropped"] <= max_dropped]
    if not kept:
        return 0.0

    def gain(p: Mapping[str, float | int]) -> float:
        return round(p["abstained_with_standing"] * p["unanswerable"] - p["dropped"] * p["answerable"], 6)

    best = max(gain(p) for p in kept)
    return float(min(p["floor"] for p in kept if gain(p) == best))


def _share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0
