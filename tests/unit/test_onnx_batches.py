"""How the ONNX runtime cuts a batch into model calls: texts sorted by their token count, each call
bounded by the padded tokens it computes (rows x the longest row), so a large write neither pays for
padding nor runs one call whose activations overflow the CPU's cache (a 100-fact batch in calls of up to
64 rows cost 2.1x the CPU time per fact of calls of up to 256 padded tokens: docs/PERFORMANCE.md)."""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.embeddings.base import Spanned
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
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-batches")


@pytest.fixture(scope="module")
def encoder(cache: Path) -> OnnxEncoder:
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


class ThreadRecordingSession(RecordingSession):
    """The real session, recording the thread of every call and whether another call was running."""

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self.threads: set[str] = set()
        self.running = 0
        self.overlapped = False
        self._lock = threading.Lock()

    def run(self, names: list[str], feeds: dict[str, Any]) -> Any:
        with self._lock:
            self.threads.add(threading.current_thread().name)
            self.running += 1
            self.overlapped = self.overlapped or self.running > 1
        try:
            return super().run(names, feeds)
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture(scope="module")
def parallel(cache: Path) -> Iterator[tuple[OnnxEncoder, ThreadRecordingSession]]:
    """The same export, loaded to run two model calls at once."""
    twin = prepare_onnx(bundled_model_path(), cache, name=MODEL_NAME, threads=1, parallel=2)
    twin._session = recorder = ThreadRecordingSession(twin._session)  # type: ignore[assignment]
    yield twin, recorder
    twin.close()


def reset(session: ThreadRecordingSession) -> ThreadRecordingSession:
    session.threads.clear()
    session.overlapped = False
    return session


def test_parallel_calls_run_at_once_and_change_no_vector_and_no_order(
    encoder: OnnxEncoder, parallel: tuple[OnnxEncoder, ThreadRecordingSession]
) -> None:
    twin, session = parallel[0], reset(parallel[1])
    texts = facts(100, seed=3)
    recording(encoder)
    alone = encoder.encode(texts)
    together = twin.encode(texts)
    assert len(session.threads) == 2
    assert threading.current_thread().name not in session.threads
    assert session.overlapped, "no two model calls ran at the same time"
    assert min(cosine(a, b) for a, b in zip(together, alone, strict=True)) >= 1 - 1e-6


def test_parallel_span_calls_keep_every_passage_in_place(
    encoder: OnnxEncoder, parallel: tuple[OnnxEncoder, ThreadRecordingSession]
) -> None:
    twin, session = parallel[0], reset(parallel[1])
    texts = facts(30, seed=4)
    items = [Spanned(t, ((0, len(t) // 2), (len(t) // 2, len(t)))) for t in texts]
    recording(encoder)
    alone = encoder.encode_spans(items)
    together = twin.encode_spans(items)
    assert len(session.threads) == 2
    for a, b in zip(together, alone, strict=True):
        assert cosine(a.vector, b.vector) >= 1 - 1e-6
        assert len(a.spans) == len(b.spans) == 2
        assert min(cosine(x, y) for x, y in zip(a.spans, b.spans, strict=True)) >= 1 - 1e-6


def test_a_query_stays_on_the_calling_thread(parallel: tuple[OnnxEncoder, ThreadRecordingSession]) -> None:
    twin, session = parallel[0], reset(parallel[1])
    twin.encode(["where do I live?"])
    assert session.threads == {threading.current_thread().name}
