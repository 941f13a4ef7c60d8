"""Metering for embedders that report no usage of their own (the local model, hashing).

They bill no provider, so each call is recorded with zero tokens: `GET /v1/usage` then counts every
embedding call, as it does for an OpenAI-compatible endpoint, which reports its own tokens.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from app.embeddings.base import Embedder, SupersedeThresholds
from app.usage.meter import record_embedding_usage


class MeteredEmbedder:
    """Wraps an embedder; every `embed` call of a batch is one zero-token `embed` usage record."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def thresholds(self) -> SupersedeThresholds:
        return self.inner.thresholds

    @property
    def relevance_floor(self) -> float:
        return self.inner.relevance_floor

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = await self.inner.embed(texts)
        if texts:
            record_embedding_usage(self.inner.name, 0, round((time.perf_counter() - started) * 1000, 3))
        return vectors

    async def aclose(self) -> None:
        await self.inner.aclose()
