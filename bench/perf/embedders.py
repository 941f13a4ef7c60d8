"""The embedding model's own cost, apart from the datasets (which all use the hash embedder).

Recall embeds its query alone, so a query's latency through `Embedder.embed` is what a recall adds on
top of the figures measured with the hash embedder; a batch import embeds its items in one call, so its
throughput in rows/s is the ceiling the model puts on batch imports.
"""

from __future__ import annotations

import time
from typing import Any

from tqdm import tqdm

from app.embeddings import Embedder, HashEmbedder, LocalEmbedder, local_embedder_available
from bench.common import percentiles
from bench.perf.data import TextGenerator

EMBEDDERS = ("hash", "local")
WARMUP = 5  # the first calls pay for lazy initialisation (thread pool, tokenizer caches)


async def time_embedder(embedder: Embedder, queries: list[str], batches: list[list[str]]) -> dict[str, Any]:
    """Per-query latency (each query embedded alone, after `WARMUP` unmeasured ones) and batch rows/s."""
    for query in queries[:WARMUP]:
        await embedder.embed([query])
    query_ms = []
    for query in tqdm(queries[WARMUP:], desc=f"{embedder.name}: queries", leave=False):
        started = time.perf_counter()
        await embedder.embed([query])
        query_ms.append((time.perf_counter() - started) * 1000)
    rows, seconds = 0, 0.0
    for batch in tqdm(batches, desc=f"{embedder.name}: batches", leave=False):
        started = time.perf_counter()
        vectors = await embedder.embed(batch)
        seconds += time.perf_counter() - started
        rows += len(vectors)
    return {
        "model": embedder.name,
        "query_ms": percentiles(query_ms),
        "batch_rows": rows,
        "batch_rows_per_s": round(rows / seconds, 1),
    }


async def embedders_section(
    names: list[str], *, queries: int = 200, batches: int = 4, batch_size: int = 500
) -> dict[str, Any]:
    """Each named embedder (of `EMBEDDERS`) on the bench's own query and sentence texts."""
    text = TextGenerator(seed=47)
    query_texts = [text.query() for _ in range(queries + WARMUP)]
    batch_texts = [[text.sentence() for _ in range(batch_size)] for _ in range(batches)]
    out: dict[str, Any] = {}
    for name in names:
        if name == "local" and not local_embedder_available():
            out[name] = {"available": False}
            continue
        started = time.perf_counter()
        embedder: Embedder = HashEmbedder() if name == "hash" else await LocalEmbedder.load()
        load_s = time.perf_counter() - started
        out[name] = {"available": True, "load_s": round(load_s, 2)}
        try:
            out[name] |= await time_embedder(embedder, query_texts, batch_texts)
        finally:
            await embedder.aclose()
    return out
