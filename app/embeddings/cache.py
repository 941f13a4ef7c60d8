"""A per-process cache of single-text embeddings: the same query within a short window costs nothing.

Recall embeds its query alone, and agents repeat queries (the same question asked again in a turn,
retries, several tools recalling for one message). A hit skips the model entirely: with the local
MiniLM that is the largest fixed cost of a recall. Only calls of one text are cached, so a batch
import neither fills nor flushes it. Entries are keyed by the embedder's name and the text (vectors
from different models are never mixed), bounded in number (least recently used goes first) and in
age (`ttl_s`, measured on a monotonic clock). Texts live in this process's memory only: nothing is
persisted or logged.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from app.embeddings.base import Embedder, EmbedderWrapper

__all__ = ["QueryEmbeddingCache", "with_query_cache"]


class QueryEmbeddingCache(EmbedderWrapper):
    """Wraps an embedder; a one-text call seen within `ttl_s` returns the stored vector."""

    def __init__(
        self,
        inner: Embedder,
        *,
        size: int,
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if size < 1 or ttl_s <= 0:
            raise ValueError("a query cache needs size >= 1 and ttl_s > 0")
        super().__init__(inner)
        self.size, self.ttl_s, self._clock = size, ttl_s, clock
        self._entries: OrderedDict[tuple[str, str], tuple[float, list[float]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) != 1:
            return await self.inner.embed(texts)
        key = (self.inner.name, texts[0])
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None and now - entry[0] < self.ttl_s:
            self._entries.move_to_end(key)
            self.hits += 1
            return [list(entry[1])]  # a copy: callers may keep or change what they get
        self.misses += 1
        vectors = await self.inner.embed(texts)
        self._entries[key] = (self._clock(), list(vectors[0]))
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return vectors

    def __len__(self) -> int:
        return len(self._entries)


def with_query_cache(embedder: Embedder, size: int, ttl_s: float) -> Embedder:
    """`embedder` behind a query cache, or unchanged when `size` is 0 (the cache off)."""
    if size <= 0:
        return embedder
    return QueryEmbeddingCache(embedder, size=size, ttl_s=ttl_s)
