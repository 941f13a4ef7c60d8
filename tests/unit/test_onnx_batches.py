"""How the ONNX runtime cuts a batch into model calls: texts sorted by their token count, each call
bounded by the padded tokens it computes (rows x the longest row), so a large write neither pays for
padding nor runs one call whose activations overflow the CPU's cache (a 100-fact batch in calls of up to
64 rows cost 2.1x the CPU time per fact of calls of up to 256 padded tokens: docs/PERFORMANCE.md)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.embeddings.local import MODEL_NAME, bundled_model_path
from app.embeddings.onnx_encoder import MAX_BATCH_TOKENS, OnnxEncoder
from app.embeddings.onnx_export import prepare_onnx

WORDS = [
    "the",
    "team",
    "ships",
    "on",
    "friday",
    "reviews",
    "monday",
    "database",
    "migration",
    "latency",
    "budget",
    "memory",
    "user",
    "prefers",
]


class RecordingSession:
    """The real onnxruntime session, recording the shape of every call's input."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.shapes: list[tuple[int, int]] = []

    def run(self, names: list[str], feeds: dict[str, Any]) -> Any:
        rows, columns = feeds["input_ids"].shape
        self.shapes.append((rows, columns))
        return self.session.run(names, feeds)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> OnnxEncoder:
    cache: Path = tmp_path_factory.mktemp("onnx-batches")
    return prepare_onnx(bundled_model_path(), cache, name=MODEL_NAME, threads=1)


def recording(encoder: OnnxEncoder) -> RecordingSession:
    session = encoder._session
    if isinstance(session, RecordingSession):
        session = session.session
    encoder._session = session = RecordingSession(session)  # type: ignore[assignment]
    return session


def facts(count: int, seed: int) -> list[str]:
    """Sentences from 5 to ~200 words, shuffled: a batch write of mixed lengths."""
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.choice((5, 12, 30, 80, 200)))).capitalize() + "."
        for _ in range(count)
    ]


def token_counts(encoder: OnnxEncoder, texts: Sequence[str]) -> list[int]:
    return [len(e.ids) for e in encoder._tokenizer.encode_batch(list(texts))]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def test_a_large_batch_is_cut_into_calls_within_the_token_budget(encoder: OnnxEncoder) -> None:
    texts = facts(100, seed=1)
    session = recording(encoder)
    encoder.encode(texts)
    assert sum(rows for rows, _ in session.shapes) == len(texts)
    over = [
        (rows, columns) for rows, columns in session.shapes if rows > 1 and rows * columns > MAX_BATCH_TOKENS
    ]
    assert over == [], f"calls past {MAX_BATCH_TOKENS} padded tokens: {over}"
    # Sorted by tokens, not characters: what is computed is close to what the texts hold.
    padded = sum(rows * columns for rows, columns in session.shapes)
    assert padded <= 1.1 * sum(token_counts(encoder, texts))


def test_short_texts_still_share_a_call(encoder: OnnxEncoder) -> None:
    queries = [
        f"what does the {w} {v} on {d}?" for w in WORDS[:8] for v, d in (("ship", "friday"), ("do", "x"))
    ]
    session = recording(encoder)
    encoder.encode(queries)
    assert len(session.shapes) < len(queries) / 4


def test_the_cut_changes_no_vector_and_no_order(encoder: OnnxEncoder) -> None:
    texts = facts(40, seed=2)
    recording(encoder)
    batched = encoder.encode(texts)
    alone = [encoder.encode([t])[0] for t in texts]
    assert len(batched) == len(texts)
    assert min(cosine(a, b) for a, b in zip(batched, alone, strict=True)) >= 1 - 1e-5
