"""The per-process query-embedding cache: what it stores, for how long, and what it never serves."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.embeddings import HashEmbedder
from app.embeddings.cache import QueryEmbeddingCache, with_query_cache


class CountingEmbedder(HashEmbedder):
    """The hash embedder, remembering every call's texts."""

    def __init__(self, dim: int = 384) -> None:
        super().__init__(dim=dim)
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return await super().embed(texts)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_repeated_query_skips_the_model_and_returns_the_same_vector() -> None:
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, size=8, ttl_s=60)
    [first] = await cache.embed(["where do I deploy"])
    [second] = await cache.embed(["where do I deploy"])
    assert second == first == (await HashEmbedder().embed(["where do I deploy"]))[0]
    assert inner.calls == [["where do I deploy"]]
    assert (cache.hits, cache.misses) == (1, 1)
    await cache.embed(["where do I deploy?"])  # another text is another entry
    assert len(inner.calls) == 2


async def test_callers_get_copies() -> None:
    cache = QueryEmbeddingCache(CountingEmbedder(), size=8, ttl_s=60)
    [vector] = await cache.embed(["tea"])
    vector[0] = 42.0
    [again] = await cache.embed(["tea"])
    assert again[0] != 42.0


async def test_entries_expire_after_the_ttl() -> None:
    inner, clock = CountingEmbedder(), Clock()
    cache = QueryEmbeddingCache(inner, size=8, ttl_s=30, clock=clock)
    await cache.embed(["tea"])
    clock.now += 29.9
    await cache.embed(["tea"])
    assert len(inner.calls) == 1
    clock.now += 0.2  # 30.1 s after it was stored
    await cache.embed(["tea"])
    assert len(inner.calls) == 2


async def test_the_least_recently_used_entry_goes_first() -> None:
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, size=2, ttl_s=60)
    for text in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        await cache.embed([text])
    assert len(cache) == 2
    await cache.embed(["a"])
    assert len(inner.calls) == 3
    await cache.embed(["b"])
    assert inner.calls[-1] == ["b"]


async def test_batches_pass_through_without_filling_the_cache() -> None:
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, size=8, ttl_s=60)
    assert await cache.embed([]) == []
    vectors = await cache.embed(["a", "b"])
    assert len(vectors) == 2
    assert len(cache) == 0
    await cache.embed(["a"])
    assert inner.calls == [[], ["a", "b"], ["a"]]


async def test_entries_are_keyed_by_the_model() -> None:
    inner = CountingEmbedder(dim=256)
    cache = QueryEmbeddingCache(inner, size=8, ttl_s=60)
    [small] = await cache.embed(["tea"])
    inner._dim = 384  # the same object now reports another model name (hash-v1-384)
    [large] = await cache.embed(["tea"])
    assert (len(small), len(large)) == (256, 384)
    assert len(inner.calls) == 2


def test_the_wrapper_keeps_the_models_identity() -> None:
    inner = CountingEmbedder()
    cache = with_query_cache(inner, 16, 60)
    assert isinstance(cache, QueryEmbeddingCache)
    assert (cache.name, cache.dim, cache.thresholds) == (inner.name, inner.dim, inner.thresholds)
    assert with_query_cache(inner, 0, 60) is inner


def test_a_cache_needs_room_and_time() -> None:
    with pytest.raises(ValueError, match="size >= 1"):
        QueryEmbeddingCache(CountingEmbedder(), size=0, ttl_s=60)
    with pytest.raises(ValueError, match="ttl_s > 0"):
        QueryEmbeddingCache(CountingEmbedder(), size=1, ttl_s=0)
