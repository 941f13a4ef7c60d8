"""The floor's calibration (bench.quality.floor): what a recall's candidates say about a floor, the
sweep, and the rule that chooses one."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.quality.floor import choose, relevance_signals, sweep


@dataclass(frozen=True)
class Cand:
    cosine: float
    coverage: float = 0.0
    bm25: float = 0.0
    standing: bool = False
    turns: list[str] = field(default_factory=list)


def test_signals_take_the_best_floored_candidate_and_the_best_holding_evidence() -> None:
    signals = relevance_signals(
        [Cand(0.9, standing=True), Cand(0.5, turns=["t1"]), Cand(0.2, coverage=0.7, turns=["t2"])], ["t1"]
    )
    assert signals["standing"] is True
    assert signals["best"]["similarity"] == 0.7  # the standing memory is not floored
    assert signals["best"]["cosine"] == 0.5
    assert signals["evidence"]["similarity"] == 0.5
    assert relevance_signals([Cand(0.5)], ["missing"])["evidence"] is None


def _row(group: str, best: float, evidence: float | None = None) -> dict[str, object]:
    values = {"similarity": best}
    return {
        "group": group,
        "signals": {
            "standing": False,
            "best": values,
            "evidence": None if evidence is None else {"similarity": evidence},
        },
    }


def test_the_rule_stops_where_abstention_stops_paying_for_drops() -> None:
    rows = [
        *(_row("main", 0.8, 0.6) for _ in range(98)),
        _row("main", 0.8, 0.35),
        _row("main", 0.8, 0.45),
        _row("adversarial", 0.3),
        _row("adversarial", 0.9),
    ]
    floors = [0.2, 0.3, 0.31, 0.4, 0.5]
    curve = sweep(rows, "similarity", floors)
    assert [p["abstained"] for p in curve] == [0.0, 0.0, 0.5, 0.5, 0.5]
    assert [p["dropped"] for p in curve] == [0.0, 0.0, 0.0, 0.01, 0.02]
    assert choose(curve, 0.02) == 0.31  # higher floors abstain no more and drop answerable questions
    assert choose(curve, 0.0) == 0.31
