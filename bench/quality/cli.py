"""Memory quality at a token budget (../shared/BENCH.md, family 1), against baselines.

    python -m bench.quality --dataset synthetic --dataset locomo:PATH --dataset beam:DIR \\
        [--dataset json:PATH] [--dataset qma:PATH] [--dataset memopilot:PATH] \\
        [--systems engram,dense,bm25,full_history,no_memory] [--embedders hash,local[,openai]] \\
        [--modes raw,extracted] [--budgets 64,128,256,512,1024,2048] [--limit-conversations N] [--run NAME]

Output: bench/results/<run>/results.json (every per-question result), summary.md (tables) and
curves-*.png (recall and staleness against budget, one line per system, per dataset/embedder/mode).
Engram runs in-process on a throwaway embedded PostgreSQL (or BENCH_DATABASE_URL).
`python -m bench.quality --render bench/results/<run>` redraws the tables and curves of an earlier run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from app.lib.heap import tune_for_serving
from bench.common import RESULTS, bench_database, machine
from bench.quality import report
from bench.quality.embedding import build
from bench.quality.engram import EngramStore
from bench.quality.model import Dataset
from bench.quality.runner import RANKED, Collected, Options, Runner, load_dataset

SYSTEMS = ("engram", "dense", "bm25", "full_history", "no_memory")


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.quality",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dataset",
        action="append",
        required=True,
        help="synthetic[:SEED] | locomo:PATH | beam:DIR | json:PATH | qma:PATH | memopilot:PATH",
    )
    parser.add_argument("--systems", type=_csv, default=list(SYSTEMS))
    parser.add_argument("--embedders", type=_csv, default=["hash", "local"])
    parser.add_argument("--modes", type=_csv, default=["raw", "extracted"])
    parser.add_argument(
        "--budgets", type=lambda v: [int(x) for x in _csv(v)], default=[64, 128, 256, 512, 1024, 2048]
    )
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--personas", type=int, default=12, help="synthetic personas")
    parser.add_argument("--seed", type=int, default=7, help="synthetic seed")
    parser.add_argument("--chunk-chars", type=int, default=2000, help="longest unit; longer turns are split")
    parser.add_argument(
        "--embed-cache", type=Path, default=None, help="reuse embeddings across runs (iteration only)"
    )
    parser.add_argument("--run", default=None, help="results folder name (default: quality-<timestamp>)")
    args = parser.parse_args(argv)
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if set(args.modes) - {"raw", "extracted"}:
        parser.error("modes are raw and extracted")
    return args


async def run(args: argparse.Namespace, owner_url: str | None, app_url: str | None) -> dict[str, Any]:
    started = time.perf_counter()
    options = Options(
        systems=args.systems,
        budgets=sorted(args.budgets),
        modes=args.modes,
        limit=args.limit_conversations,
        chunk_chars=args.chunk_chars,
        seed=args.seed,
        personas=args.personas,
    )
    collected = Collected()
    mark = time.perf_counter()
    loaded = [load_dataset(spec, options) for spec in args.dataset]
    collected.phases["load"] += time.perf_counter() - mark
    datasets = [d for kind, d in loaded if kind == "dataset"]
    mark = time.perf_counter()
    embedders = await build(args.embedders, args.embed_cache)
    collected.phases["embedder load"] += time.perf_counter() - mark
    store = None
    if "engram" in options.systems and owner_url and app_url:
        store = EngramStore(owner_url, app_url)
        await store.open(args.run)
    runner = Runner(options, embedders, store, collected)
    # The collector set up as the served process sets it up once started (app.main): what loading built
    # (the data sets, the model, the vectors) is exempted from collection and the young generation is
    # collected less often. Recall's latency is the service's request's; with CPython's defaults a
    # full collection walked the bench's ~430k objects (~130 ms, 43 times in one run) and the young
    # generation was collected about once per recall.
    tune_for_serving()
    ranked = sum(s in RANKED for s in options.systems)
    total = sum(len(d.questions) * (len(embedders) * len(options.modes) * bool(ranked) + 1) for d in datasets)
    try:
        with tqdm(total=total, desc="questions", unit="q", dynamic_ncols=True) as bar:
            for dataset in datasets:
                assert isinstance(dataset, Dataset)
                await runner.run_dataset(dataset, bar)
        for kind, data in loaded:
            if kind != "dataset":
                await runner.run_seeds(kind, data)
    finally:
        for embedder in embedders:
            embedder.save()
            await embedder.aclose()
        if store is not None:
            await store.close()
    return {
        "collected": collected,
        "options": options,
        "embedders": {e.label: {"model": e.name, "calls": e.calls, "texts": e.embedded} for e in embedders},
        "wall_seconds": time.perf_counter() - started,
    }


def write(args: argparse.Namespace, outcome: dict[str, Any], command: str) -> Path:
    collected: Collected = outcome["collected"]
    options: Options = outcome["options"]
    out = RESULTS / args.run
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "run": args.run,
        "command": command,
        "wall_seconds": round(outcome["wall_seconds"], 1),
        "phases_seconds": {k: round(v, 1) for k, v in collected.phases.items()},
        "machine": machine(),
        "budgets": options.budgets,
        "systems": options.systems,
        "modes": options.modes,
        "embedders": outcome["embedders"],
        "datasets": collected.datasets,
        "engram_actions": collected.engram_actions,
        "capabilities": collected.capabilities,
        "published": collected.published,
        "results": collected.rows,
        "seed_results": collected.seed_rows,
    }
    (out / "results.json").write_text(json.dumps(payload, default=str, separators=(",", ":")))
    render(payload, out)
    return out


def render(payload: dict[str, Any], out: Path) -> None:
    """summary.md and the PNG curves from a results.json payload."""
    budgets = payload["budgets"]
    rows = payload["results"]
    wall = payload["wall_seconds"]
    phases = payload["phases_seconds"]
    sections = [
        f"# Quality benchmark: {payload.get('run', out.name)}\n",
        f"Command: `{payload['command']}`\n",
        f"Wall time {wall / 60:.1f} min on {payload['machine']['cpus']} CPUs "
        f"({', '.join(f'{k} {v:.0f}s' for k, v in phases.items())}).\n",
        "Embedders: "
        + ", ".join(
            f"{k} = {v['model']} ({v['texts']} texts embedded)" for k, v in payload["embedders"].items()
        )
        + ".\n",
    ]
    if rows:
        sections.append(report.headline(rows, budgets))
    if payload["engram_actions"]:
        sections.append("Engram write actions per dataset/embedder/mode:\n")
        sections.append(
            report.table(
                ["run", "actions"],
                [
                    [k, ", ".join(f"{a} {n}" for a, n in sorted(v.items()))]
                    for k, v in payload["engram_actions"].items()
                ],
            )
        )
    for name, info in payload["datasets"].items():
        sections.append(report.dataset_section(rows, name, info, budgets))
        report.plot(rows, name, budgets, out)
    if payload["seed_results"]:
        sections.append(
            report.seeds_section(payload["seed_results"], payload["published"], payload["capabilities"])
        )
    (out / "summary.md").write_text("\n".join(sections))


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    if argv is None and sys.argv[1:2] == ["--render"]:  # re-render tables and plots of an earlier run
        folder = Path(sys.argv[2])
        render(json.loads((folder / "results.json").read_text()), folder)
        print(f"rendered {folder}")
        return
    args = parse(argv)
    args.run = args.run or time.strftime("quality-%Y%m%d-%H%M%S")
    command = "python -m bench.quality " + shlex.join(sys.argv[1:] if argv is None else argv)
    if "engram" in args.systems:
        with bench_database() as (owner_url, app_url):
            outcome = asyncio.run(run(args, owner_url, app_url))
    else:
        outcome = asyncio.run(run(args, None, None))
    out = write(args, outcome, command)
    print(f"wall time {outcome['wall_seconds'] / 60:.1f} min; results in {out}")
