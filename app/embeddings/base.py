"""The embedder interface shared by every embedding backend.

An embedder turns memory texts into L2-normalised vectors. Besides the vectors it
carries the metadata the memory layer needs to use them safely:

* ``name`` is stored in ``memories.embed_model`` so vectors from different models
  are never compared with each other (a model switch means a re-embed).
* ``dim`` sizes the pgvector column / the query vector.
* ``thresholds`` are the cosine cut-offs for superseding memories. They are a
  property of the model, not of the service: a lexical hash embedder and a
  sentence-transformer put the same pair of sentences at very different cosines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from app.lib.ranking import Fusion

__all__ = [
    "Embedder",
    "EmbedderWrapper",
    "EmbeddingError",
    "SpanVectors",
    "Spanned",
    "SupersedeThresholds",
    "embed_apart",
    "l2_normalise",
    "numeric_tokens_differ",
]


@dataclass(frozen=True, slots=True)
class SupersedeThresholds:
    """Cosine cut-offs used when a new memory lands next to an existing one.

    Both apply only to memories of the same type in the same scope.

    Attributes:
        supersede: cosine >= this -> the new memory supersedes the old one automatically.
        review: ``review <= cosine < supersede`` -> a 'supersede' proposal is queued for a human.
    """

    supersede: float
    review: float

    def __post_init__(self) -> None:
        # A review band above the auto band would silently never fire; fail at construction.
        if not (0.0 <= self.review <= self.supersede <= 1.0):
            raise ValueError(
                f"need 0 <= review <= supersede <= 1, got review={self.review} supersede={self.supersede}"
            )


class EmbeddingError(Exception):
    """An embedding provider failed (HTTP error, timeout, malformed response).

    The message is safe to log and to return to API clients: it never contains the
    provider API key. ``status_code`` is the provider's HTTP status when there was
    one; ``retryable`` tells the caller whether trying again later can help
    (rate limits, timeouts, 5xx) as opposed to configuration errors (401, 400).
    """

    def __init__(self, message: str, *, status_code: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class Spanned:
    """A text, and spans of it (characters [start, end), as `str` slices count) whose vectors are
    wanted with its own: a long memory and its passages."""

    text: str
    spans: tuple[tuple[int, int], ...] = ()

    def pieces(self) -> list[str]:
        return [self.text[start:end] for start, end in self.spans]


@dataclass(frozen=True, slots=True)
class SpanVectors:
    """A text's vector and one per span, in the spans' order."""

    vector: list[float]
    spans: list[list[float]]


@runtime_checkable
class Embedder(Protocol):
    """What the memory layer needs from an embedding backend."""

    @property
    def name(self) -> str:
        """Model identifier stored in ``memories.embed_model`` (e.g. ``hash-v1-384``)."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector returned by :meth:`embed`."""
        ...

    @property
    def thresholds(self) -> SupersedeThresholds:
        """Supersede/review cosine cut-offs calibrated for this model."""
        ...

    @property
    def relevance_floor(self) -> float:
        """Recall's minimum relevance with this model: below it a memory is not about the query at all
        (hash vectors are lexical, unrelated text sits near 0; sentence embeddings put unrelated English
        around 0.0-0.2 with MiniLM, higher with large API models)."""
        ...

    @property
    def fusion(self) -> Fusion:
        """How recall combines this model's cosine with BM25 unless `ENGRAM_FUSION` says otherwise
        (app/memory/fusion.py): `minmax` when the cosine carries meaning the words do not, `normalised`
        when it is a second, coarser keyword match (the hash embedder). docs/RANKING.md measures both."""
        ...

    @property
    def paraphrases(self) -> bool:
        """Whether its cosine finds a paraphrase: a question about due dates near a rule about deadlines
        (sentence models). Then a relevance near 0 means off the topic, and recall weighs a rule that says
        when it applies by its relevance (app/memory/packing.py); with hashed words it means only that no
        word is shared."""
        ...

    @property
    def remote(self) -> bool:
        """Whether embedding waits on another machine (an API) rather than on this one's CPU. Recall then
        reads its text half meanwhile; beside a local model on the same cores that work would only
        compete with it (docs/RANKING.md, "The text half read while a remote model embeds")."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch in one logical call; vectors are L2-normalised; ``[]`` for empty input."""
        ...

    async def embed_spans(self, items: Sequence[Spanned]) -> list[SpanVectors]:
        """Each text's vector (the one `embed` gives it) and its spans' vectors, in one logical call.

        A model that reads tokens in context pools each span's tokens from the text's own pass (the
        local model); others embed each span's text apart (`embed_apart`)."""
        ...

    async def aclose(self) -> None:
        """Release resources held by the embedder (idempotent)."""
        ...


class EmbedderWrapper:
    """An embedder around another one: its name, dim and thresholds are the wrapped model's (so rows it
    writes are that model's), and closing it closes the wrapped one. Subclasses override `embed`."""

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

    @property
    def fusion(self) -> Fusion:
        return self.inner.fusion

    @property
    def paraphrases(self) -> bool:
        return self.inner.paraphrases

    @property
    def remote(self) -> bool:
        return self.inner.remote

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed(texts)

    async def embed_spans(self, items: Sequence[Spanned]) -> list[SpanVectors]:
        return await self.inner.embed_spans(items)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def embed_apart(
    embed: Callable[[Sequence[str]], Awaitable[list[list[float]]]], items: Sequence[Spanned]
) -> list[SpanVectors]:
    """`embed_spans` for a model that sees texts only whole: one `embed` call of every text, then
    every span's text."""
    pieces = [piece for item in items for piece in item.pieces()]
    vectors = await embed([item.text for item in items] + pieces) if items else []
    out: list[SpanVectors] = []
    at = len(items)
    for item, vector in zip(items, vectors[: len(items)], strict=True):
        out.append(SpanVectors(vector, vectors[at : at + len(item.spans)]))
        at += len(item.spans)
    return out


def l2_normalise(vector: Sequence[float]) -> list[float]:
    """Return ``vector`` scaled to unit L2 norm.

    Raises:
        EmbeddingError: for a zero (or non-finite) vector. pgvector's cosine distance of a
            zero vector is NaN, which would silently poison ORDER BY, so we refuse it here.
    """
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise EmbeddingError("embedding has zero or non-finite norm")
    return [x / norm for x in vector]


# Tokens that carry a digit: versions, counts, ages, dates, regions ("eu-west-1"), ids.
_NUMERIC_TOKEN = re.compile(r"[\w.\-+:/$%]*\d[\w.\-+:/$%]*")


def numeric_tokens_differ(old: str, new: str) -> bool:
    """True when the two texts mention different numbers / digit-bearing identifiers.

    Sentence embeddings barely notice a changed number: with all-MiniLM-L6-v2,
    "User is 34 years old" vs "User is 35 years old" scores 0.970 and with a longer
    sentence 0.990, above any usable auto-supersede threshold. Callers should treat a
    pair for which this returns True as a review candidate instead of auto-superseding,
    whatever its cosine. Trailing sentence punctuation is ignored ("16." == "16").
    """

    def tokens(text: str) -> set[str]:
        return {t.rstrip(".:,;-/").lower() for t in _NUMERIC_TOKEN.findall(text)}

    return tokens(old) != tokens(new)
