"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

Works with OpenAI itself and with compatible providers (DashScope
``text-embedding-v3``, vLLM, Ollama, ...). Retries and timeouts are the SDK's job
(``max_retries`` / ``timeout`` on the ``AsyncOpenAI`` client the app builds once);
this class batches, validates and normalises, and turns SDK failures into
:class:`~app.embeddings.base.EmbeddingError` with messages that are safe to log.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence

import openai

from app.embeddings.base import (
    EmbeddingError,
    Spanned,
    SpanVectors,
    SupersedeThresholds,
    embed_apart,
    l2_normalise,
)
from app.lib.ranking import Fusion

__all__ = ["DEFAULT_OPENAI_THRESHOLDS", "OpenAICompatEmbedder", "UsageCallback"]

UsageCallback = Callable[[str, int, float], None]
"""``on_usage(model, total_tokens, latency_ms)``: called once per HTTP request that succeeded."""

DEFAULT_OPENAI_THRESHOLDS = SupersedeThresholds(supersede=0.90, review=0.78)

# Provider error messages routinely echo credentials ("Incorrect API key provided: sk-...").
_SECRET_PATTERNS = (
    re.compile(r"\bBearer\s+\S+", re.IGNORECASE),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-*]{6,}"),
)
_MAX_MESSAGE = 300


class OpenAICompatEmbedder:
    """Embedder backed by ``client.embeddings.create``.

    Args:
        client: the app-wide ``openai.AsyncOpenAI`` (connection pool, retries, timeout).
            It is not closed by :meth:`aclose` unless ``owns_client`` is True.
        model: provider model name; also this embedder's ``name``.
        dim: requested output dimension, sent as ``dimensions=`` only when given. When
            None the dimension is learned from the first response; reading :attr:`dim`
            before that raises :class:`EmbeddingError` (call :meth:`ensure_dim` at start-up
            if the size is needed before the first embed).
        thresholds: supersede/review cut-offs for this model.
        max_batch: most inputs per request (DashScope text-embedding-v3 allows 10;
            OpenAI allows 2048). Larger batches are split into ``ceil(n / max_batch)`` requests.
        on_usage: optional usage hook, called per successful request.
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        dim: int | None = None,
        thresholds: SupersedeThresholds = DEFAULT_OPENAI_THRESHOLDS,
        max_batch: int = 10,
        on_usage: UsageCallback | None = None,
        owns_client: bool = False,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if dim is not None and dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self._client = client
        self._model = model
        self._requested_dim = dim
        self._dim = dim
        self._thresholds = thresholds
        self._max_batch = max_batch
        self._on_usage = on_usage
        self._owns_client = owns_client

    @property
    def name(self) -> str:
        """The provider model name, e.g. ``text-embedding-v3``."""
        return self._model

    @property
    def dim(self) -> int:
        """Vector length: the ``dim`` given, else the length seen in the first response."""
        if self._dim is None:
            raise EmbeddingError(
                f"dimension of {self._model} is unknown until the first embed(); "
                "pass dim= or call ensure_dim()"
            )
        return self._dim

    @property
    def thresholds(self) -> SupersedeThresholds:
        """Supersede/review cut-offs (default 0.90 / 0.78)."""
        return self._thresholds

    @property
    def relevance_floor(self) -> float:
        """0.30, not calibrated: no API model was reachable for `bench.calibrate_floor` (docs/RANKING.md)."""
        return 0.30

    @property
    def fusion(self) -> Fusion:
        """`minmax`, as for the local sentence embedder; not measured with an API model (none reachable)."""
        return Fusion.MINMAX

    @property
    def paraphrases(self) -> bool:
        """True: a sentence model."""
        return True

    @property
    def remote(self) -> bool:
        """True: an HTTP API; the wait is the network's and the provider's."""
        return True

    @property
    def max_batch(self) -> int:
        """Most inputs sent in one request."""
        return self._max_batch

    async def ensure_dim(self) -> int:
        """Return :attr:`dim`, embedding a one-word probe first if it is not known yet."""
        if self._dim is None:
            await self.embed(["dimension probe"])
        return self.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` with as few requests as ``max_batch`` allows; unit-norm vectors in input order."""
        if not texts:
            return []
        items = list(texts)
        vectors: list[list[float]] = []
        # Chunks go out one after another rather than concurrently: providers rate-limit
        # per minute, and the SDK's retry/backoff works best without a self-made burst.
        for start in range(0, len(items), self._max_batch):
            vectors.extend(await self._embed_chunk(items[start : start + self._max_batch]))
        return vectors

    async def embed_spans(self, items: Sequence[Spanned]) -> list[SpanVectors]:
        """A provider sees texts whole: spans are embedded apart, in the same requests."""
        return await embed_apart(self.embed, items)

    async def _embed_chunk(self, chunk: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            if self._requested_dim is not None:
                response = await self._client.embeddings.create(
                    model=self._model, input=chunk, encoding_format="float", dimensions=self._requested_dim
                )
            else:
                response = await self._client.embeddings.create(
                    model=self._model, input=chunk, encoding_format="float"
                )
        except openai.APIError as exc:
            # `from None`: the SDK exception's text and request can carry the key, and a
            # chained cause would put them into every logged traceback.
            raise self._wrap(exc) from None
        latency_ms = (time.perf_counter() - started) * 1000.0

        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(chunk))):
            raise EmbeddingError(
                f"{self._model}: expected embeddings for indexes 0..{len(chunk) - 1}, "
                f"got {[item.index for item in data]}"
            )
        vectors = [self._check_vector(item.embedding) for item in data]

        if self._on_usage is not None:
            # Some compatible servers omit usage; report 0 rather than failing the embed.
            usage = getattr(response, "usage", None)
            total_tokens = int(getattr(usage, "total_tokens", 0) or 0)
            self._on_usage(self._model, total_tokens, latency_ms)
        return vectors

    def _check_vector(self, raw: Sequence[float]) -> list[float]:
        if self._dim is None:
            self._dim = len(raw)
        elif len(raw) != self._dim:
            raise EmbeddingError(f"{self._model}: expected {self._dim}-d embeddings, got {len(raw)}-d")
        if not all(math.isfinite(x) for x in raw):
            raise EmbeddingError(f"{self._model}: provider returned non-finite values")
        return l2_normalise(raw)

    def _wrap(self, exc: openai.APIError) -> EmbeddingError:
        """Translate an SDK error into an EmbeddingError whose message cannot contain the key."""
        if isinstance(exc, openai.APITimeoutError):
            return EmbeddingError(f"{self._model}: embedding request timed out", retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            return EmbeddingError(
                f"{self._model}: could not connect to the embedding provider", retryable=True
            )
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        detail = self._sanitise(_provider_message(exc))
        retryable = status is not None and (status in (408, 409, 429) or status >= 500)
        code = f" ({exc.code})" if exc.code else ""
        prefix = f"HTTP {status}" if status is not None else type(exc).__name__
        return EmbeddingError(
            f"{self._model}: {prefix}{code}: {detail}", status_code=status, retryable=retryable
        )

    def _sanitise(self, message: str) -> str:
        key = getattr(self._client, "api_key", None)
        if isinstance(key, str) and len(key) >= 4:
            message = message.replace(key, "[redacted]")
        for pattern in _SECRET_PATTERNS:
            message = pattern.sub("[redacted]", message)
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "..."
        return message

    async def aclose(self) -> None:
        """Close the client only if this embedder owns it (the app-wide client is closed by the app)."""
        if self._owns_client:
            await self._client.close()


def _provider_message(exc: openai.APIError) -> str:
    # Prefer the provider's own `error.message` over the SDK's "Error code: 401 - {...}"
    # rendering of the whole body.
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return exc.message
