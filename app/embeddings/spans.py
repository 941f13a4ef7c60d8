"""Late chunking: a long text's passages pooled from the token vectors of the text's own forward pass.

Embedding each passage apart costs a second forward pass over every word of a long memory, yet the
model already computed a vector for each of those tokens, in context, when it embedded the whole text.
A passage's vector here is the mean of the vectors of the tokens that start inside it, L2-normalised:
the model's own pooling (the mean over tokens) taken over the passage's part of the sequence ("late
chunking", Günther et al. 2024). Its tokens also read the words around the passage, so a passage that
says "it" still carries what "it" is.

The model reads at most its sequence length (256 tokens for all-MiniLM-L6-v2). A span that ends past
the last token the model read has no (complete) token vectors: it comes back as None, and
`with_apart` embeds it on its own, as every span was before.

Pure: numpy arrays and token offsets in, vectors out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from app.embeddings.base import Spanned, SpanVectors

__all__ = ["Pooled", "pool_spans", "with_apart"]

# A text's vector, and its spans' (None: past what the model read).
Pooled = tuple[list[float], list[list[float] | None]]


def pool_spans(
    hidden: np.ndarray[Any, Any],
    offsets: Sequence[tuple[int, int]],
    special: Sequence[int],
    spans: Sequence[tuple[int, int]],
    *,
    complete: bool,
) -> list[list[float] | None]:
    """Each span's vector: the normalised mean of `hidden`'s rows (one per token the model read) whose
    token starts inside it; special tokens ([CLS], [SEP]) belong to no span.

    `offsets` are the tokens' character spans in the text, `special` marks special tokens (1), and
    `complete` says the model read the whole text (it was not truncated). A span with no token, or
    reaching past the last token read of a truncated text, is None.
    """
    words = [i for i, flag in enumerate(special) if not flag]
    read_to = offsets[words[-1]][1] if words else 0
    out: list[list[float] | None] = []
    for start, end in spans:
        rows = [i for i in words if start <= offsets[i][0] < end]
        if not rows or (not complete and end > read_to):
            out.append(None)
            continue
        mean = hidden[rows].astype(np.float64).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        out.append((mean / norm).tolist() if norm > 0.0 and np.isfinite(norm) else None)
    return out


def with_apart(
    items: Sequence[Spanned], pooled: Sequence[Pooled], encode: Callable[[list[str]], list[list[float]]]
) -> list[SpanVectors]:
    """`pooled` made whole: the spans it has no vector for are encoded on their own (one call)."""
    missing = [
        (i, j) for i, (_, spans) in enumerate(pooled) for j, vector in enumerate(spans) if vector is None
    ]
    apart = encode([items[i].text[slice(*items[i].spans[j])] for i, j in missing]) if missing else []
    filled = [list(spans) for _, spans in pooled]
    for (i, j), vector in zip(missing, apart, strict=True):
        filled[i][j] = vector
    return [
        SpanVectors(vector, [v for v in spans if v is not None])
        for (vector, _), spans in zip(pooled, filled, strict=True)
    ]
