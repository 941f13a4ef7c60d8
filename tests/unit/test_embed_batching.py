"""Concurrent embed calls share one model call while the model is busy: each caller gets its own vectors
(those it would get alone), in order; an error reaches only the callers whose texts cause it."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

import pytest

from app.embeddings import EmbeddingError, HashEmbedder, LocalEmbedder
from app.embeddings.batcher import MicroBatcher

QUERIES = [
    "which frontend framework do we use?",
    "when is the standup?",
    "where does the user live?",
    "what is the user allergic to?",
    "who owns the deploy?",
    "what does Alice prefer for dinner?",
    "which database do we run?",
    "how do we rotate API keys?",
]
LONG = " ".join(f"Sentence {i} of a long memory about deploys, reviews and on-call." for i in range(30))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def assert_same_vectors(got: list[list[float]], alone: list[list[float]]) -> None:
    """Equal to the single-call vectors up to float rounding (a batch pads, which reorders sums)."""
    assert len(got) == len(alone)
    for a, b in zip(got, alone, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
        assert cosine(a, b) >= 1 - 1e-6


async def busy(embedder: LocalEmbedder) -> asyncio.Task[list[list[float]]]:
    """Start a long encode and return once the model is running it."""
    calls = embedder.stats.encode_calls
    task = asyncio.create_task(embedder.embed([LONG] * 48))
    while embedder.stats.encode_calls == calls:  # noqa: ASYNC110 - polls the batcher's public counter
        await asyncio.sleep(0)
    return task


async def test_queries_arriving_during_an_encode_share_the_next_model_call(
    onnx_embedder: LocalEmbedder,
) -> None:
    alone = [(await onnx_embedder.embed([q]))[0] for q in QUERIES]
    before = onnx_embedder.stats.encode_calls, onnx_embedder.stats.batched_requests
    running = await busy(onnx_embedder)
    results = await asyncio.gather(*(onnx_embedder.embed([q]) for q in QUERIES))
    await running
    assert onnx_embedder.stats.encode_calls - before[0] == 2  # the long encode, then all 8 queries at once
    assert onnx_embedder.stats.batched_requests - before[1] == len(QUERIES)
    assert onnx_embedder.stats.largest_batch >= len(QUERIES)
    assert_same_vectors([r[0] for r in results], alone)


async def test_requests_of_several_texts_come_back_split_and_in_order(onnx_embedder: LocalEmbedder) -> None:
    requests = [QUERIES[0:3], QUERIES[3:4], [LONG, *QUERIES[4:7]], QUERIES[7:8], ["", QUERIES[0]]]
    alone = [[(await onnx_embedder.embed([t]))[0] for t in texts] for texts in requests]
    before = onnx_embedder.stats.encode_calls
    results = await asyncio.gather(*(onnx_embedder.embed(texts) for texts in requests))
    assert onnx_embedder.stats.encode_calls - before == 1  # all queued before the worker ran: one call
    for got, expected in zip(results, alone, strict=True):
        assert_same_vectors(got, expected)


async def test_a_failing_input_fails_only_its_own_caller(onnx_embedder: LocalEmbedder) -> None:
    (alone,) = await onnx_embedder.embed([QUERIES[0]])
    running = await busy(onnx_embedder)
    good = asyncio.create_task(onnx_embedder.embed([QUERIES[0]]))
    bad = asyncio.create_task(onnx_embedder.embed([None]))  # type: ignore[list-item]  # the tokenizer refuses it
    other = asyncio.create_task(onnx_embedder.embed(QUERIES[1:3]))
    await running
    with pytest.raises(EmbeddingError, match="local embedding failed"):
        await bad
    assert_same_vectors(await good, [alone])
    assert len(await other) == 2


async def test_every_queued_caller_gets_the_error_when_the_model_is_gone(
    onnx_embedder: LocalEmbedder,
) -> None:
    embedder = LocalEmbedder(onnx_embedder._encoder)  # type: ignore[arg-type]  # the same runtime, its own queue
    running = await busy(embedder)
    queued = [asyncio.create_task(embedder.embed([q])) for q in QUERIES[:3]]
    await asyncio.sleep(0)
    await embedder.aclose()
    assert len(await running) == 48  # the encode under way finishes
    for task in queued:
        with pytest.raises(EmbeddingError, match="closed"):
            await task
    with pytest.raises(EmbeddingError, match="closed"):
        await embedder.embed(["after close"])


async def test_a_cancelled_caller_leaves_the_others_their_vectors(onnx_embedder: LocalEmbedder) -> None:
    alone = [(await onnx_embedder.embed([q]))[0] for q in QUERIES[:3]]
    running = await busy(onnx_embedder)
    tasks = [asyncio.create_task(onnx_embedder.embed([q])) for q in QUERIES[:3]]
    await asyncio.sleep(0)
    tasks[1].cancel()
    await running
    assert_same_vectors((await tasks[0]) + (await tasks[2]), [alone[0], alone[2]])
    with pytest.raises(asyncio.CancelledError):
        await tasks[1]
    assert_same_vectors(await onnx_embedder.embed([QUERIES[1]]), [alone[1]])  # and it still serves


async def test_batches_hold_at_most_max_texts_and_a_large_request_runs_alone() -> None:
    model = HashEmbedder(dim=64)  # deterministic per text, whatever the batch
    batcher = MicroBatcher(model.embed, max_texts=4)
    requests = [[f"text {i}"] for i in range(6)] + [[f"big {i}" for i in range(9)], ["last"]]
    results = await asyncio.gather(*(batcher.run(texts) for texts in requests))
    assert [len(r) for r in results] == [len(t) for t in requests]
    for texts, got in zip(requests, results, strict=True):
        assert got == await model.embed(texts)
    # 4 singles, then 2 singles (the big one does not fit beside them), the big one alone, then "last".
    assert batcher.stats.encode_calls == 4
    assert batcher.stats.requests == len(requests)
    assert batcher.stats.largest_batch == 4
    with pytest.raises(ValueError, match="max_texts"):
        MicroBatcher(model.embed, max_texts=0)
