"""The peer line's summary: one Markdown table per dataset, systems side by side.

    python -m bench.peers.report [bench/results/peers/results.json]

re-renders `summary.md` beside a saved results file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SYSTEMS = (
    ("mem0", "mem0 (in-process)"),
    ("engram_in_process", "Engram in-process"),
    ("engram_http", "Engram HTTP"),
)


def _pct(p: dict[str, float] | None, *keys: str) -> str:
    if not p:
        return "-"
    return " / ".join(f"{p[k]:g}" for k in keys)


def _num(value: float | None, fmt: str = "g") -> str:
    return "-" if value is None else format(value, fmt)


def _row(label: str, cells: list[str]) -> str:
    return f"| {label} | " + " | ".join(cells) + " |"


def dataset_table(d: dict[str, Any]) -> list[str]:
    systems = [(key, title) for key, title in SYSTEMS if key in d["systems"]]
    s = [d["systems"][key] for key, _ in systems]
    load = d.get("load_average", {})
    lines = [
        f"**{d['name']}** ({d['facts']} facts, {d['users']} users, {d['queries']} queries; "
        f"load average {_num(load.get('start'), '.1f')} at the start, {_num(load.get('end'), '.1f')} at the end)",
        "",
        "| | " + " | ".join(title for _, title in systems) + " |",
        "|---|" + "---|" * len(systems),
        _row(
            "recall / search p50 / p95 / p99 ms", [_pct(x.get("search_ms"), "p50", "p95", "p99") for x in s]
        ),
        _row("query embedding p50 ms (inside)", [_pct(x.get("embed_ms"), "p50") for x in s]),
        _row("single add p50 ms", [_pct(x.get("add_single_ms"), "p50") for x in s]),
        _row("single adds per second", [_num(x.get("add_single_per_s")) for x in s]),
        _row("batch adds per second", [_num(x.get("add_batch_per_s")) for x in s]),
        _row("results returned (mean, min) when 10 exist", [_returned(x) for x in s]),
        _row("overlap of results with exact top-10", [_overlap(x.get("overlap")) for x in s]),
        _row(
            "overlap of cosine candidates with the exact top-10 of the stored vectors",
            [_overlap(x.get("candidate_overlap")) for x in s],
        ),
    ]
    plain, call = d.get("plain_embed_ms"), d.get("service_embed_call_ms")
    if plain:
        line = f"The same model in a plain script (`encode` of one query on the calling thread): p50 {plain['p50']:g} ms"
        if call:
            line += f"; Engram's `LocalEmbedder.embed` of one query outside a recall: p50 {call['p50']:g} ms"
        if d.get("torch_threads"):
            line += f" (torch threads in the bench process: {d['torch_threads']})"
        lines += ["", line + "."]
    return lines


def _returned(x: dict[str, Any]) -> str:
    r = x.get("returned")
    return "-" if not r else f"{r['mean']:g} ({r['min']:g})"


def _overlap(o: dict[str, float] | None) -> str:
    return "-" if not o else f"{o['mean']:.2f} (min {o['min']:.2f})"


def render(payload: dict[str, Any]) -> str:
    m = payload["machine"]
    lines = [f"Machine: {m['cpus']} cores, Python {m['python']}, {m['when']}", ""]
    threads = payload.get("threads")
    if threads:
        by = threads["encode_ms_by_threads"]
        cells = ", ".join(
            f"{n} thread{'s' if n != '1' else ''}: p50 {p['p50']:g} ms (p95 {p['p95']:g})"
            for n, p in by.items()
        )
        lines += [
            f"One-query `encode`, torch threads interleaved (load average {threads['load_average']:.1f}): {cells}.",
            "",
        ]
    for d in payload["datasets"]:
        lines += [*dataset_table(d), ""]
    for note in payload.get("notes", []):
        lines.append(f"- {note}")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bench/results/peers/results.json")
    markdown = render(json.loads(path.read_text()))
    (path.parent / "summary.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
