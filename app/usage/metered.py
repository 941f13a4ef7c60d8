"""Metering for embedders that report no usage of their own (the local model, hashing).

They bill no provider, so each call is recorded with zero tokens: `GET /v1/usage` then counts every
embedding call, as it does for an OpenAI-compatible endpoint, which reports its own tokens.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from app.embeddings.base import EmbedderWrapper, Spanned, SpanVectors
from app.usage.meter import record_embedding_usage


class MeteredEmbedder(EmbedderWrapper):
    """Wraps an embedder; every `embed` or `embed_spans` call is one zero-token `embed` usage record."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = await self.inner.embed(texts)
        if texts:
            record_embedding_usage(self.inner.name, 0, round((time.perf_counter() - started) * 1000, 3))
        return vectors

    async def embed_spans(self, items: Sequence[Spanned]) -> list[SpanVectors]:
        started = time.perf_counter()
        vectors = await self.inner.embed_spans(items)
        if items:
            record_embedding_usage(self.inner.name, 0, round((time.perf_counter() - started) * 1000, 3))
        return vectors
