"""A long memory's passages pooled from the token vectors of its own forward pass (app/embeddings/spans.py):
the pooling itself on known arrays, then the real model on both runtimes (the text's vector unchanged,
the runtimes agreeing, spans past the sequence length embedded on their own), and the embedders that see
texts only whole."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from app.embeddings import HashEmbedder, LocalEmbedder
from app.embeddings.base import Spanned, SpanVectors
from app.embeddings.spans import pool_spans, with_apart
from bench.quality.embedding import CachedEmbedder


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def unit(v: np.ndarray) -> list[float]:
    return (v / np.linalg.norm(v)).tolist()


# "[CLS] ab cd ef [SEP]": characters 0-2, 3-5, 6-8; the special tokens at (0, 0).
OFFSETS = [(0, 0), (0, 2), (3, 5), (6, 8), (0, 0)]
SPECIAL = [1, 0, 0, 0, 1]
HIDDEN = np.array([[9.0, 9.0], [1.0, 0.0], [0.0, 1.0], [3.0, 4.0], [-9.0, 9.0]])


def test_a_span_is_the_normalised_mean_of_the_tokens_that_start_in_it() -> None:
    first, rest = pool_spans(HIDDEN, OFFSETS, SPECIAL, [(0, 3), (3, 8)], complete=True)
    assert first == pytest.approx(unit(np.array([1.0, 0.0])))
    assert rest == pytest.approx(unit(np.array([1.5, 2.5])))  # special tokens belong to no span


def test_a_span_past_what_a_truncated_text_was_read_to_has_no_vector() -> None:
    # The model read up to character 8; the text went on (it was truncated).
    inside, across, after = pool_spans(HIDDEN, OFFSETS, SPECIAL, [(3, 8), (6, 12), (9, 20)], complete=False)
    assert inside is not None
    assert across is None
    assert after is None
    # The same spans of a text read whole: the one across the end has its tokens, the one after none.
    _, across_whole, after_whole = pool_spans(
        HIDDEN, OFFSETS, SPECIAL, [(3, 8), (6, 12), (9, 20)], complete=True
    )
    assert across_whole == pytest.approx(unit(np.array([3.0, 4.0])))
    assert after_whole is None


def test_spans_without_a_vector_are_encoded_on_their_own_in_one_call() -> None:
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[float(len(t)), 0.0] for t in texts]

    items = [Spanned("ab cd ef", ((0, 2), (3, 8))), Spanned("xyz", ()), Spanned("long text", ((5, 9),))]
    got = with_apart(
        items, [([1.0, 0.0], [[0.0, 1.0], None]), ([1.0, 0.0], []), ([0.0, 1.0], [None])], encode
    )
    assert calls == [["cd ef", "text"]]
    assert got == [
        SpanVectors([1.0, 0.0], [[0.0, 1.0], [5.0, 0.0]]),
        SpanVectors([1.0, 0.0], []),
        SpanVectors([0.0, 1.0], [[4.0, 0.0]]),
    ]


TOPICS = (
    "The user is allergic to peanuts and carries an epinephrine pen to every dinner. "
    "Restaurants are asked about peanut oil before ordering, and desserts with nuts are refused.\n"
    "The deploy pipeline runs on Friday afternoons. It builds the container image, migrates the "
    "database and shifts traffic to the new release in three steps over an hour."
)


def halves(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    cut = text.index("\n")
    return (0, cut), (cut + 1, len(text))


async def test_the_text_keeps_its_vector_and_each_passage_reads_as_its_topic(
    local_embedder: LocalEmbedder,
) -> None:
    [got] = await local_embedder.embed_spans([Spanned(TOPICS, halves(TOPICS))])
    [whole] = await local_embedder.embed([TOPICS])
    assert cosine(got.vector, whole) == pytest.approx(1.0, abs=1e-5)
    allergy, deploy = got.spans
    assert all(math.fsum(x * x for x in v) == pytest.approx(1.0, abs=1e-5) for v in got.spans)
    food, release = await local_embedder.embed(["peanut allergy at restaurants", "when do we deploy"])
    assert cosine(food, allergy) > cosine(food, deploy) + 0.2
    assert cosine(release, deploy) > cosine(release, allergy) + 0.2


async def test_both_runtimes_pool_the_same_passage_vectors(
    onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder
) -> None:
    items = [Spanned(TOPICS, halves(TOPICS)), Spanned("Short and whole.", ())]
    onnx, torch = await onnx_embedder.embed_spans(items), await torch_embedder.embed_spans(items)
    for a, b in zip(onnx, torch, strict=True):
        assert cosine(a.vector, b.vector) >= 1 - 1e-3
        assert len(a.spans) == len(b.spans)
        assert all(cosine(x, y) >= 1 - 1e-3 for x, y in zip(a.spans, b.spans, strict=True))


async def test_a_passage_past_the_sequence_length_is_embedded_on_its_own(
    local_embedder: LocalEmbedder,
) -> None:
    head = " ".join(f"Sentence {i} says the team reviews code on Mondays." for i in range(40))
    tail = "The staging server moved to Frankfurt in March."
    text = f"{head}\n{tail}"  # the head alone is well past 256 tokens
    [got] = await local_embedder.embed_spans([Spanned(text, ((0, 40), (len(head) + 1, len(text))))])
    [apart] = await local_embedder.embed([tail])
    assert cosine(got.spans[1], apart) == pytest.approx(1.0, abs=1e-5)
    assert cosine(got.spans[0], apart) < 0.9  # the first passage was pooled, not embedded as the tail


async def test_a_model_that_sees_texts_whole_embeds_each_span_apart() -> None:
    embedder = HashEmbedder(dim=64)
    [got] = await embedder.embed_spans([Spanned(TOPICS, halves(TOPICS))])
    (first, second), whole = halves(TOPICS), TOPICS
    assert got.vector == (await embedder.embed([whole]))[0]
    assert got.spans == await embedder.embed([whole[slice(*first)], whole[slice(*second)]])


async def test_the_bench_cache_keeps_span_vectors_per_text() -> None:
    cached = CachedEmbedder(HashEmbedder(dim=64), "hash")
    items = [Spanned(TOPICS, halves(TOPICS)), Spanned("no passages", ())]
    first = await cached.embed_spans(items)
    for got, want in zip(first, await HashEmbedder(dim=64).embed_spans(items), strict=True):
        assert got.vector == pytest.approx(want.vector, abs=1e-6)  # kept as float32
        assert len(got.spans) == len(want.spans)
        assert all(a == pytest.approx(b, abs=1e-6) for a, b in zip(got.spans, want.spans, strict=True))
    assert await cached.embed_spans(items) == first
    assert cached.calls == 1
    # The same span of another text is another key: a pooled span depends on its text.
    other = Spanned(TOPICS + " More.", halves(TOPICS))
    await cached.embed_spans([other])
    assert cached.calls == 2
