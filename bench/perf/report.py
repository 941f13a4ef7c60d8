"""Markdown tables and PNG plots for the speed benchmark.

    python -m bench.perf.report [bench/results/perf/results.json]

re-renders `summary.md`, `recall_latency.png` and `load.png` beside a saved results file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.common import pyplot


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def render(payload: dict[str, Any], bench_dir: Path) -> str:
    lines = [
        f"Machine: {payload['machine']['cpus']} cores, Python {payload['machine']['python']}, "
        f"{payload['machine']['when']}",
        "",
        "| dataset | largest scope | floor p50/p95 ms | in-process p50/p95 ms | HTTP p50/p95 ms | "
        "in-proc/floor p95 | HTTP/floor p95 | exactness mean (min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in payload["datasets"]:
        f, i, h = d["floor_ms"], d["in_process_ms"], d["http_ms"]
        lines.append(
            f"| {d['spec']['name']} | {d['largest_scope']} | {f['p50']} / {f['p95']} | {i['p50']} / {i['p95']} | "
            f"{h['p50']} / {h['p95']} | {_ratio(i['p95'], f['p95'])} | {_ratio(h['p95'], f['p95'])} | "
            f"{d['exactness']['mean']} ({d['exactness']['min']}) |"
        )
    lines += [
        "",
        "| dataset | COPY rows/s | batch import rows/s | batch/COPY | single remember rows/s |",
        "|---|---|---|---|---|",
    ]
    for d in payload["datasets"]:
        w = d["writes"]
        lines.append(
            f"| {d['spec']['name']} | {d['copy_rows_per_s']} | {w['batch_rows_per_s']} | "
            f"{w['batch_rows_per_s'] / d['copy_rows_per_s']:.0%} | {w['single_rows_per_s']} |"
        )
    lines += [
        "",
        "| dataset | load | clients | req/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in payload["datasets"]:
        for key, v in d.items():
            if key.startswith("load_"):
                kind = key.split("_")[1]
                lines.append(
                    f"| {d['spec']['name']} | {kind} | {v['clients']} | {v['rps']} | {v['p50']} | {v['p99']} | {v['errors']} |"
                )
        lines.append(f"| {d['spec']['name']} | peak RSS | | | | {d['peak_rss_mb']} MB | |")
    lines += _embedder_lines(payload.get("embedders", {}))
    markdown = "\n".join(lines) + "\n"
    (bench_dir / "summary.md").write_text(markdown)
    _plot(payload, bench_dir / "recall_latency.png")
    _plot_load(payload, bench_dir / "load.png")
    return markdown


def _embedder_lines(embedders: dict[str, Any]) -> list[str]:
    """The models timed apart: what a recall adds per query, and the ceiling on batch imports."""
    if not embedders:
        return []
    lines = [
        "",
        "| embedder | model | load s | query p50 / p95 / p99 ms | batch rows/s |",
        "|---|---|---|---|---|",
    ]
    for name, e in embedders.items():
        if not e["available"]:
            lines.append(f"| {name} | not installed | | | |")
            continue
        q = e["query_ms"]
        lines.append(
            f"| {name} | {e['model']} | {e['load_s']} | {q['p50']} / {q['p95']} / {q['p99']} | "
            f"{e['batch_rows_per_s']} |"
        )
    return lines


def _plot(payload: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    names = [d["spec"]["name"] for d in payload["datasets"]]
    series = {"raw SQL floor": "floor_ms", "in-process": "in_process_ms", "HTTP": "http_ms"}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.25
    for offset, (label, key) in enumerate(series.items()):
        xs = [i + (offset - 1) * width for i in range(len(names))]
        ax.bar(xs, [d[key]["p95"] for d in payload["datasets"]], width, label=f"{label} p95")
    ax.set_xticks(range(len(names)), names)
    ax.set_yscale("log")  # 10k and 1M differ a hundredfold
    ax.set_ylabel("recall latency p95 (ms, log scale)")
    ax.set_title("Recall latency against the raw SQL floor (hash embedder)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def load_series(dataset: dict[str, Any], kind: str) -> tuple[list[int], list[float], list[float]]:
    """(clients, req/s, p99 ms) of one dataset's concurrent load of `kind`, by number of clients."""
    runs = sorted(
        (v for key, v in dataset.items() if key.startswith(f"load_{kind}_")), key=lambda v: v["clients"]
    )
    return [v["clients"] for v in runs], [v["rps"] for v in runs], [v["p99"] for v in runs]


def _plot_load(payload: dict[str, Any], path: Path) -> None:
    """Throughput and tail latency against the number of concurrent clients, recall and remember."""
    plt = pyplot()

    fig, (rps_ax, p99_ax) = plt.subplots(1, 2, figsize=(11, 5.5))
    ticks: set[int] = set()
    for d, color in zip(payload["datasets"], plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False):
        for kind, style in (("recall", "-o"), ("remember", "--s")):
            clients, rps, p99 = load_series(d, kind)
            if not clients:
                continue
            ticks |= set(clients)
            label = f"{d['spec']['name']}, {kind}"
            rps_ax.plot(clients, rps, style, color=color, label=label)
            p99_ax.plot(clients, p99, style, color=color, label=label)
    for ax in (rps_ax, p99_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(ticks), [str(n) for n in sorted(ticks)])
        ax.set_xlabel("concurrent HTTP clients (one hot tenant)")
    rps_ax.set_ylabel("requests/s")
    rps_ax.set_title("Throughput")
    p99_ax.set_yscale("log")
    p99_ax.set_ylabel("p99 latency (ms, log scale)")
    p99_ax.set_title("Tail latency")
    handles, labels = rps_ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize="small")
    fig.tight_layout(rect=(0, 0.12, 1, 1))  # room below for the legend
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> None:
    results = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "results/perf/results.json"
    print(render(json.loads(results.read_text()), bench_dir=results.parent))


if __name__ == "__main__":
    main(sys.argv[1:])
