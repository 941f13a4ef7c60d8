"""A deterministic, dependency-free lexical embedder (feature hashing).

This is the default embedder when no model is configured and the one the test suite
uses: it needs nothing beyond the standard library, is fast enough to run inline on
the event loop, and gives the same vector for the same text in every process on
every machine (it hashes with BLAKE2b, never with Python's per-process salted
``hash()``), so vectors written by one worker are comparable with those of another.

It is lexical, not semantic: "I live in Paris" and "my home is in Paris" overlap only
on "paris". Its supersede thresholds are therefore conservative.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from functools import lru_cache

from app.embeddings.base import Spanned, SpanVectors, SupersedeThresholds, embed_apart
from app.lib.ranking import Fusion

__all__ = ["HashEmbedder"]

# The scheme version is part of the model name: changing tokenisation, weights or the
# hash layout changes every vector, so it must change the name stored in embed_model.
_SCHEME = "hash-v1"

_WORD = re.compile(r"\w+")
# Word runs glued by in-word punctuation: "Next.js", "gpt-4o", "eu-west-1", "user's".
_COMPOUND = re.compile(r"\w+(?:['’.\-/+]\w+)*")

# Deliberately small: function words only. Negations ("not", "no", "never") are kept
# because "likes coffee" / "does not like coffee" must not look identical.
_STOPWORDS = frozenset(
    # A word block reads better than a 100-line list literal.
    """
    a an the and or but if then than so as of at by for from in into on onto to with without
    about over under is am are was were be been being do does did doing has have had having
    will would shall should can could may might must i me my mine myself we us our ours you
    your yours he him his she her hers it its they them their theirs this that these those
    there here what which who whom whose when where why how also just very too s t
    """.split()  # noqa: SIM905
)

# Relative weights of the three feature families. Unigrams carry the content; bigrams
# reward shared word order; character trigrams are a low-weight fallback so spelling
# variants ("Next.js"/"nextjs", "postgres"/"postgress") still overlap a little.
_W_UNIGRAM = 1.0
_W_BIGRAM = 0.6
_W_TRIGRAM = 0.25


def _stem(token: str) -> str:
    """Crude suffix stripping: plural s/es/ies, -ing, -ed (with consonant undoubling), final e."""
    if token.isdigit() or len(token) <= 3:
        return token
    stem = token
    if stem.endswith("ies") and len(stem) > 4:
        stem = stem[:-3] + "y"
    elif stem.endswith(("sses", "shes", "ches", "xes", "zes")):
        stem = stem[:-2]
    elif stem.endswith("s") and not stem.endswith(("ss", "us", "is")):
        stem = stem[:-1]
    else:
        for suffix, min_len in (("ing", 6), ("ed", 5)):
            if stem.endswith(suffix) and len(stem) >= min_len:
                stem = stem[: -len(suffix)]
                # "running" -> "runn" -> "run"; "stopped" -> "stopp" -> "stop".
                if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                    stem = stem[:-1]
                break
    # Dropping a final "e" lets "live"/"lives"/"lived"/"living" all meet at "liv".
    if len(stem) > 3 and stem.endswith("e"):
        stem = stem[:-1]
    return stem


def _tokens(text: str) -> tuple[list[str], list[str]]:
    """Split into (word sequence, joined compounds).

    The sequence feeds unigrams and bigrams. A compound such as "Next.js" also yields its
    joined form "nextjs" as an extra unigram (not part of the bigram sequence), so the
    dotted and the run-together spellings share a full-weight feature.
    """
    sequence: list[str] = []
    joined: list[str] = []
    for match in _COMPOUND.finditer(text.lower()):
        parts = _WORD.findall(match.group())
        sequence.extend(_stem(p) for p in parts if p not in _STOPWORDS)
        # Not for possessives/contractions ("user's", "don't"): their stopword tail would
        # turn the joined form into a second copy of the head word.
        if len(parts) > 1 and not any(p in _STOPWORDS for p in parts):
            joined.append(_stem("".join(parts)))
    return sequence, joined


@lru_cache(maxsize=65536)
def _slot(feature: str, buckets: int) -> tuple[int, float]:
    """Bucket index and sign for a feature; cached because features repeat a lot across texts."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # Low bit picks the sign (signed hashing keeps collisions unbiased in expectation);
    # the remaining bits pick the bucket.
    sign = 1.0 if value & 1 else -1.0
    return (value >> 1) % buckets, sign


class HashEmbedder:
    """Feature-hashing embedder: unigrams + word bigrams + character trigrams, signed, sublinear tf.

    Texts with no tokens at all (empty, punctuation only, only stopwords) map to a fixed
    unit vector on a reserved bucket that no feature ever hashes to. That keeps the
    vector valid for pgvector (a zero vector has NaN cosine distance) while having
    cosine 0 with every non-empty text, so "nothing" never supersedes "something".
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ValueError(f"dim must be >= 8, got {dim}")
        self._dim = dim
        self._thresholds = SupersedeThresholds(supersede=0.90, review=0.75)

    @property
    def name(self) -> str:
        """``hash-v1-<dim>``: the dimension is part of the name because it changes every vector."""
        return f"{_SCHEME}-{self._dim}"

    @property
    def dim(self) -> int:
        """Vector length."""
        return self._dim

    @property
    def thresholds(self) -> SupersedeThresholds:
        """0.90 / 0.75: lexical cosine, so only near-verbatim restatements auto-supersede."""
        return self._thresholds

    @property
    def relevance_floor(self) -> float:
        """0.12, calibrated on the development sets (`python -m bench.calibrate_floor`, docs/RANKING.md):
        every floor from 0.09 to 0.20 drops no answerable question's evidence and makes the same
        unanswerable questions abstain, so the default already on that plateau stays."""
        return 0.12

    @property
    def fusion(self) -> Fusion:
        """`normalised`: a hashed-words cosine is a coarser copy of the keyword half, and scaled to the
        same range it outvoted BM25 (LoCoMo raw recall@k 1.3-2.0 points lower under `minmax`,
        docs/RANKING.md)."""
        return Fusion.NORMALISED

    @property
    def paraphrases(self) -> bool:
        """False: hashed words share nothing with a paraphrase."""
        return False

    @property
    def remote(self) -> bool:
        """False: computed here, in microseconds."""
        return False

    def embed_text(self, text: str) -> list[float]:
        """Embed a single text synchronously (for callers that are not async, e.g. test servers)."""
        # The last bucket is reserved for the "no tokens" vector; features use the rest.
        buckets = self._dim - 1
        sequence, joined = _tokens(text)
        unigrams = sequence + joined
        if not unigrams:
            vector = [0.0] * self._dim
            vector[-1] = 1.0
            return vector

        # dicts keep insertion order, so the float summation order (and thus every bit
        # of the result) is the same in every process regardless of PYTHONHASHSEED.
        counts: dict[str, int] = {}
        for token in unigrams:
            counts["w:" + token] = counts.get("w:" + token, 0) + 1
        for left, right in itertools.pairwise(sequence):
            key = f"b:{left} {right}"
            counts[key] = counts.get(key, 0) + 1
        for token in unigrams:
            padded = f"#{token}#"
            for i in range(len(padded) - 2):
                key = "c:" + padded[i : i + 3]
                counts[key] = counts.get(key, 0) + 1

        weights = {"w": _W_UNIGRAM, "b": _W_BIGRAM, "c": _W_TRIGRAM}
        vector = [0.0] * self._dim
        for feature, count in counts.items():
            index, sign = _slot(feature, buckets)
            # Sublinear tf: a word repeated five times is not five times as important.
            vector[index] += sign * weights[feature[0]] * (1.0 + math.log(count))

        norm = math.sqrt(math.fsum(x * x for x in vector))
        if norm == 0.0:
            # Every feature cancelled out through signed collisions; astronomically
            # unlikely, but the result must still be a valid unit vector.
            vector[-1] = 1.0
            return vector
        return [x / norm for x in vector]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch inline: pure CPU, roughly 0.1 ms per short memory, no need for a thread."""
        return [self.embed_text(text) for text in texts]

    async def embed_spans(self, items: Sequence[Spanned]) -> list[SpanVectors]:
        """Spans are hashed apart: a span's features are its own words."""
        return await embed_apart(self.embed, items)

    async def aclose(self) -> None:
        """Nothing to release."""
