"""The relevance floor's calibration per embedder (issue 20, item 7), from a quality run's recalls.

    python -m bench.quality --dataset locomo:PATH --dataset beam:DIR --dataset synthetic \\
        --systems engram --embedders hash,local --modes raw,extracted --run NAME
    python -m bench.calibrate_floor bench/results/NAME [--max-dropped 0.02] [--quantity similarity]

Every Engram question of the run carries, under each quantity the floor could compare, the best value
among its candidates and among the candidates holding its evidence (bench.quality.floor). For each
embedder (all datasets and modes pooled, and each on its own) this prints, for a sweep of floors, the
share of answerable questions whose evidence the floor drops and that it leaves empty, and the share of
unanswerable questions that abstain; and the floor chosen by one rule: among the floors that drop the
evidence of at most `--max-dropped` of the answerable questions, the one under which the most
unanswerable questions abstaining less answerable questions dropped, counted in questions (the lowest on
a tie: a step up is worth it only while it makes more questions abstain than it drops). Written to
calibration.md beside the run's results.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.quality.floor import QUANTITIES, choose, sweep

FLOORS = [round(0.01 * i, 2) for i in range(101)]  # chosen on this grid
SHOWN = {round(0.05 * i, 2) for i in range(21)}  # printed


def _table(curve: Sequence[Mapping[str, float | int]]) -> list[str]:
    lines = [
        "| floor | answerable: evidence dropped | answerable: emptied | unanswerable: abstained "
        "| ... and no standing memory |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {p['floor']:.2f} | {100 * p['dropped']:.1f} | {100 * p['emptied']:.1f} "
        f"| {100 * p['abstained']:.1f} | {100 * p['abstained_with_standing']:.1f} |"
        for p in curve
        if p["floor"] in SHOWN
    ]
    return lines


def _upgraded(signals: dict[str, Any]) -> dict[str, Any]:
    """Signals recorded while `similarity` was max(cosine, coverage) (before it took the saturated BM25
    too): that one is `coverage` now, and the new one is the higher of it and `saturated` (a maximum
    over the candidates of a maximum is the maximum of the maxima)."""
    for part in ("best", "evidence"):
        values = signals.get(part)
        if values is not None and "coverage" not in values:
            values["coverage"] = values["similarity"]
            values["similarity"] = max(values["similarity"], values["saturated"])
    return signals


def calibrate(rows: Sequence[Mapping[str, Any]], max_dropped: float, quantities: Sequence[str]) -> str:
    engram = [
        {**r, "signals": _upgraded(r["signals"])}
        for r in rows
        if r["system"] == "engram" and r.get("signals")
    ]
    by_embedder: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in engram:
        by_embedder[r["embedder"]].append(r)
    out = [f"# Relevance floor calibration (max dropped {100 * max_dropped:.1f} % of answerable)\n"]
    summary = [
        "| embedder | quantity | chosen floor | dropped | emptied | unanswerable abstained |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for embedder, own in sorted(by_embedder.items()):
        for quantity in quantities:
            curve = sweep(own, quantity, FLOORS)
            floor = choose(curve, max_dropped)
            at = next(p for p in curve if p["floor"] == floor)
            summary.append(
                f"| {embedder} | {quantity} | {floor:.2f} | {100 * at['dropped']:.1f} | "
                f"{100 * at['emptied']:.1f} | {100 * at['abstained']:.1f} |"
            )
            n_a, n_u = at["answerable"], at["unanswerable"]
            out.append(f"\n## {embedder}, {quantity}: all sets ({n_a} answerable, {n_u} unanswerable)\n")
            out += _table(curve)
            parts: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
            for r in own:
                parts[f"{r['dataset']} {r['mode']}"].append(r)
            for part, part_rows in sorted(parts.items()):
                p = next(x for x in sweep(part_rows, quantity, FLOORS) if x["floor"] == floor)
                out.append(
                    f"\nAt {floor:.2f}, {part}: dropped {100 * p['dropped']:.1f} % of {p['answerable']}, "
                    f"emptied {100 * p['emptied']:.1f} %, abstained {100 * p['abstained']:.1f} % of "
                    f"{p['unanswerable']} ({100 * p['abstained_with_standing']:.1f} % with no standing memory)"
                )
    return "\n".join(["\n".join(summary), *out]) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.calibrate_floor",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=Path, help="a bench.quality results folder")
    parser.add_argument("--max-dropped", type=float, default=0.02)
    parser.add_argument("--quantity", action="append", choices=QUANTITIES, default=None)
    args = parser.parse_args(argv)
    payload = json.loads((args.run / "results.json").read_text())
    report = calibrate(payload["results"], args.max_dropped, args.quantity or list(QUANTITIES))
    (args.run / "calibration.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
