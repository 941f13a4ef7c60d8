"""Query embedding latency of the local MiniLM: torch and ONNX in a plain script, and inside the service.

    python -m bench.embed_latency [--queries 200] [--facts 200]

Measured with the service's thread setting (ENGRAM_LOCAL_THREADS, 1 by default), interleaved, rotating
which goes first, on distinct query texts (so the service's query cache never answers):

* torch, plain: `SentenceTransformer.encode` of one query on the calling thread;
* onnx, plain: the ONNX runtime's `encode` of one query on the calling thread (the export the service
  makes, from the same installed weights);
* in-process: `LocalEmbedder.embed` of one query (the batcher and the encoding thread, from asyncio);
* inside the service: the `embed` stage of `POST /v1/recall` (`trace.latency_ms.embed`), uvicorn on
  loopback, one worker, ENGRAM_EMBEDDER=local with the default runtime, on an embedded PostgreSQL.

Results: bench/results/embed-latency/ (JSON, Markdown).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WARMUP = 5


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


async def measure(owner_url: str, app_url: str, n_queries: int, n_facts: int) -> dict[str, Any]:
    """Every path, interleaved, against a database whose migrations ran (outside this event loop)."""
    import httpx

    from app.embeddings.local import MODEL_NAME, LocalEmbedder, bundled_model_path
    from app.embeddings.onnx_export import prepare_onnx
    from app.embeddings.torch_encoder import load_sentence_transformer, set_torch_threads
    from app.lib.settings import Settings
    from bench.common import percentiles
    from bench.peers.data import facts, queries
    from bench.peers.run import create_tenant
    from bench.perf.http import serve

    threads = Settings().local_threads
    data_dir = Path(tempfile.mkdtemp(prefix="engram-embed-latency-"))
    path = bundled_model_path()
    set_torch_threads(threads)
    torch_model = load_sentence_transformer(path)
    onnx = prepare_onnx(path, data_dir / "models", name=MODEL_NAME, threads=threads)  # the service reuses it
    embedder = await LocalEmbedder.load(path, threads=threads, cache_dir=data_dir / "models")
    texts = [f"{q.text} ({i})" for i, q in enumerate(queries(n_queries + WARMUP, 2))]
    samples: dict[str, list[float]] = {"torch_plain": [], "onnx_plain": [], "in_process": [], "service": []}
    _, key = await create_tenant(owner_url)
    extra = {"ENGRAM_EMBEDDER": "local", "ENGRAM_DATA_DIR": str(data_dir)}
    with serve(owner_url, app_url, extra, startup_s=300) as server:
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=server.base, headers=headers, timeout=60) as client:
            items = [{"user_id": f.user_id, "content": f.text} for f in facts(n_facts, 2)]
            (await client.post("/v1/memories/batch", json={"items": items})).raise_for_status()
            user = items[0]["user_id"]

            async def torch_plain(text: str) -> float:
                started = time.perf_counter()
                torch_model.encode([text], normalize_embeddings=True, convert_to_numpy=True)
                return _ms(started)

            async def onnx_plain(text: str) -> float:
                started = time.perf_counter()
                onnx.encode([text])
                return _ms(started)

            async def in_process(text: str) -> float:
                started = time.perf_counter()
                await embedder.embed([text])
                return _ms(started)

            async def service(text: str) -> float:
                response = await client.post("/v1/recall", json={"user_id": user, "query": text})
                response.raise_for_status()
                return float(response.json()["trace"]["latency_ms"]["embed"])

            steps: list[tuple[str, Callable[[str], Awaitable[float]]]] = [
                ("torch_plain", torch_plain), ("onnx_plain", onnx_plain),
                ("in_process", in_process), ("service", service),
            ]  # fmt: skip
            for i, text in enumerate(texts):
                shift = i % len(steps)
                for name, step in steps[shift:] + steps[:shift]:
                    value = await step(f"{text} [{name}]")  # distinct texts: no cache answers
                    if i >= WARMUP:
                        samples[name].append(value)
    await embedder.aclose()
    return {
        "threads": threads,
        "runtime_in_process": embedder.runtime,
        "queries": n_queries,
        "facts": n_facts,
        "ms": {name: percentiles(values) for name, values in samples.items()},
    }


LABELS = {
    "torch_plain": "torch, plain script (`SentenceTransformer.encode`)",
    "onnx_plain": "onnx, plain script (`OnnxEncoder.encode`)",
    "in_process": "`LocalEmbedder.embed` in-process (batcher, encoding thread)",
    "service": "inside the service: recall's `embed` stage over HTTP",
}


def render(payload: dict[str, Any]) -> str:
    lines = [
        f"Query embedding, all-MiniLM-L6-v2, {payload['queries']} queries, threads {payload['threads']}, "
        f"load average {payload['load_average']['start']} -> {payload['load_average']['end']}",
        "",
        "| path | p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|",
    ]
    for name, label in LABELS.items():
        ms = payload["ms"][name]
        lines.append(f"| {label} | {ms['p50']:g} | {ms['p95']:g} | {ms['p99']:g} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--facts", type=int, default=200)
    args = parser.parse_args()
    from bench.common import bench_database, machine, write_results

    start = os.getloadavg()
    with bench_database() as (owner_url, app_url):
        payload = asyncio.run(measure(owner_url, app_url, args.queries, args.facts))
    payload["load_average"] = {
        "start": [round(x, 2) for x in start],
        "end": [round(x, 2) for x in os.getloadavg()],
    }
    payload["machine"] = machine()
    markdown = render(payload)
    write_results("embed-latency", payload, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
