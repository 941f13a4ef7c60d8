"""Engram against mem0 on the same machine, model, data and queries, in one run.

    pip install -c deploy/constraints.txt -e '.[local,bench,peers]'
    python -m bench.peers [--sizes 2000:20,10000:100] [--queries 200] [--single 100] [--no-mem0]

For each dataset (N facts spread evenly over U users) on one embedded PostgreSQL (Engram's database
and mem0's own beside it): the facts are written user by user to both systems, alternating (mem0's
`add` of the user's facts as messages with `infer=False`, Engram's batch remember), then single adds
into a user no query reads, then the same queries to mem0's `search`, to Engram's recall in-process
and over loopback HTTP, and to the model alone in a plain `encode` call, rotating which goes first.
Every system uses the bundled all-MiniLM-L6-v2 (mem0 through its huggingface embedder pointed at the
same files). No LLM is called, mem0's telemetry is off and nothing is fetched from the network.

Results are compared with the exact per-user top-10 (brute-force cosine in numpy over the bench's own
embeddings of the facts). Results: bench/results/peers/ (JSON, Markdown).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from pathlib import Path
from typing import Any

# Before anything imports mem0, huggingface_hub or transformers: no telemetry, no hub access.
os.environ["MEM0_TELEMETRY"] = "false"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """`2000:20,10000:100` -> [(2000, 20), (10000, 100)] (facts, users)."""
    sizes = []
    for part in text.split(","):
        if not part.strip():
            continue
        total, _, users = part.partition(":")
        if not users:
            raise ValueError(f"size {part!r} needs facts:users")
        sizes.append((int(total), int(users)))
    return sizes


def dataset_name(total: int, users: int) -> str:
    return (
        f"{total // 1000}k facts over {users} users" if total >= 1000 else f"{total} facts over {users} users"
    )


def mem0_available() -> bool:
    return all(importlib.util.find_spec(p) is not None for p in ("mem0", "psycopg", "psycopg_pool"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="2000:20,10000:100", help="facts:users, comma-separated")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--single", type=int, default=100, help="single adds per system and dataset")
    parser.add_argument("--no-mem0", action="store_true", help="Engram only (no peers extra needed)")
    parser.add_argument("--threads-queries", type=int, default=60, help="queries of the thread-count check")
    parser.add_argument("--no-http", action="store_true", help="skip Engram over HTTP")
    args = parser.parse_args()
    if not args.no_mem0 and not mem0_available():
        parser.error(
            "mem0 is not installed: pip install -c deploy/constraints.txt -e '.[peers]' (or --no-mem0)"
        )

    # Heavy imports after the environment is set.
    from app.lib.settings import Settings
    from bench.common import machine, write_results
    from bench.peers.data import queries
    from bench.peers.report import render
    from bench.peers.run import run_dataset, threads_section

    for total, users in parse_sizes(args.sizes):
        if total < users:
            parser.error("need at least one fact per user")
    workdir = Path(tempfile.mkdtemp(prefix="engram-peers-"))
    os.environ.setdefault("MEM0_DIR", str(workdir / "mem0-home"))
    datasets: list[dict[str, Any]] = []
    started = time.perf_counter()
    # First, apart: what torch's thread count does to one query (before any dataset sets it).
    threads = threads_section(
        [q.text for q in queries(args.threads_queries, 10, seed=5)], Settings().local_threads
    )
    for total, users in parse_sizes(args.sizes):
        datasets.append(
            run_dataset(
                dataset_name(total, users),
                total,
                users,
                args.queries,
                args.single,
                with_mem0=not args.no_mem0,
                with_http=not args.no_http,
                workdir=workdir,
            )
        )
    payload = {
        "machine": machine(),
        "seconds": round(time.perf_counter() - started, 1),
        "threads": threads,
        "datasets": datasets,
        "notes": NOTES,
    }
    markdown = render(payload)
    write_results("peers", payload, markdown)
    print(markdown)


NOTES = [
    "mem0 2.2.1 `Memory` (open source), pgvector store (HNSW + GIN as it creates them) in its own database "
    "on the same embedded PostgreSQL 18, huggingface embedder on the bundled all-MiniLM-L6-v2 files, "
    "`infer=False`, telemetry off; spaCy is not installed, so its search is semantic + BM25 without "
    "lemmas or entity boosts (its own fallback).",
    "mem0 'batch' is one `add` call with the user's facts as messages (it embeds and inserts them one "
    "by one); Engram's batch is one remember_many of the user's facts (one embedding call, one transaction).",
    "Engram in-process runs the service code a request runs (one transaction, tenant bound, background "
    "reinforcement); HTTP is uvicorn on loopback, one worker, the same code with ENGRAM_EMBEDDER=local.",
    "Query embedding 'inside': mem0's embedder call during search; Engram's `embed` stage of recall "
    "(latency_ms). Plain script: SentenceTransformer.encode of one query on the calling thread.",
    "Engram packs by token budget (1024) and relevance floor, not a fixed k: 'results returned' can exceed 10; "
    "result overlap compares its first 10 by score. Candidate overlap is recall's cosine half.",
    "The machine was shared with other work during the run: see each dataset's load average.",
]


if __name__ == "__main__":
    main()
