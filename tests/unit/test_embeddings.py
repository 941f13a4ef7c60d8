"""Unit tests for the hash and local embedders and the shared helpers."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.embeddings import (
    Embedder,
    EmbeddingError,
    HashEmbedder,
    LocalEmbedder,
    SupersedeThresholds,
    l2_normalise,
    local_embedder_available,
    numeric_tokens_differ,
)
from app.lib.ranking import Fusion

REPO_ROOT = Path(__file__).resolve().parents[2]

SAMPLES = [
    "User prefers dark mode in the editor",
    "The project uses PostgreSQL 16 with pgvector",
    "The frontend is built with Next.js",
    "",
]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def norm(v: Sequence[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in v))


# ---------------------------------------------------------------- helpers


def test_thresholds_validate_order() -> None:
    SupersedeThresholds(supersede=0.9, review=0.75)
    with pytest.raises(ValueError, match="review <= supersede"):
        SupersedeThresholds(supersede=0.7, review=0.8)


def test_l2_normalise_rejects_zero_vector() -> None:
    assert l2_normalise([3.0, 4.0]) == [0.6, 0.8]
    with pytest.raises(EmbeddingError):
        l2_normalise([0.0, 0.0])


@pytest.mark.parametrize(
    ("old", "new", "differ"),
    [
        ("User is 34 years old", "User is 35 years old", True),
        ("The project uses PostgreSQL 16", "The project uses PostgreSQL 16.", False),
        ("Deploy to eu-west-1", "Deploy to us-east-1", True),
        ("I live in Paris", "I live in Berlin", False),
    ],
)
def test_numeric_tokens_differ(old: str, new: str, differ: bool) -> None:
    assert numeric_tokens_differ(old, new) is differ


# ---------------------------------------------------------------- hash embedder


def test_hash_embedder_metadata() -> None:
    embedder = HashEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.name == "hash-v1-384"
    assert embedder.dim == 384
    assert HashEmbedder(dim=64).name == "hash-v1-64"
    assert embedder.thresholds == SupersedeThresholds(supersede=0.90, review=0.75)


async def test_hash_embedder_deterministic_across_instances() -> None:
    first = await HashEmbedder().embed(SAMPLES)
    second = await HashEmbedder().embed(SAMPLES)
    again = await HashEmbedder().embed(SAMPLES)
    assert first == second == again


@pytest.mark.parametrize("hash_seed", ["1", "4242"])
def test_hash_embedder_deterministic_across_processes(hash_seed: str) -> None:
    # A different PYTHONHASHSEED changes str hash() (and set order); blake2b-based
    # features with insertion-ordered dicts must give bit-identical vectors anyway.
    script = (
        "import json, sys\n"
        "from app.embeddings.hashing import HashEmbedder\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps([HashEmbedder().embed_text(t) for t in texts]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(SAMPLES),
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        check=True,
        timeout=60,
    )
    embedder = HashEmbedder()
    assert json.loads(result.stdout) == [embedder.embed_text(t) for t in SAMPLES]


async def test_hash_embedder_unit_norm() -> None:
    for vector in await HashEmbedder().embed([*SAMPLES, "a", "Ünïcödé wörds naïve café", "x " * 5000]):
        assert len(vector) == 384
        assert norm(vector) == pytest.approx(1.0, abs=1e-9)
        assert all(math.isfinite(x) for x in vector)


async def test_hash_embedder_similar_closer_than_unrelated() -> None:
    base, reworded, changed, unrelated = await HashEmbedder().embed(
        [
            "User prefers dark mode in the editor",
            "The user prefers dark mode in their editors.",
            "User prefers light mode in the editor",
            "The deployment runs on Kubernetes in eu-west-1",
        ]
    )
    assert cosine(base, reworded) > cosine(base, changed) > cosine(base, unrelated)
    # Trivial rewording (articles, plural, punctuation) should auto-supersede ...
    assert cosine(base, reworded) >= HashEmbedder().thresholds.supersede
    # ... a changed value must not.
    assert cosine(base, changed) < HashEmbedder().thresholds.supersede


async def test_hash_embedder_spelling_variants_overlap() -> None:
    dotted, plain, other = await HashEmbedder().embed(["Next.js", "nextjs", "Django"])
    assert cosine(dotted, plain) > 0.3
    assert cosine(dotted, plain) > cosine(dotted, other)


@pytest.mark.parametrize("text", ["", "   ", "?!...", "the and of"])
async def test_hash_embedder_empty_text_is_reserved_unit_vector(text: str) -> None:
    embedder = HashEmbedder()
    (vector,) = await embedder.embed([text])
    (content,) = await embedder.embed(["User likes tea"])
    assert norm(vector) == pytest.approx(1.0)
    assert vector[-1] == 1.0
    # Orthogonal to every real text: no-token input never supersedes anything.
    assert cosine(vector, content) == 0.0


async def test_hash_embedder_empty_batch() -> None:
    assert await HashEmbedder().embed([]) == []


async def test_hash_embedder_batch_equals_singles() -> None:
    embedder = HashEmbedder()
    batch = await embedder.embed(SAMPLES)
    singles = [(await embedder.embed([text]))[0] for text in SAMPLES]
    assert batch == singles


def test_hash_embedder_rejects_tiny_dim() -> None:
    with pytest.raises(ValueError, match="dim"):
        HashEmbedder(dim=4)


# ---------------------------------------------------------------- local embedder
# sentence-transformers, onnxruntime and the bundled weights are installed here and in CI, so
# these tests must run, not skip: a missing install is a failure. Each runs on both runtimes
# (`local_embedder`, tests/unit/conftest.py; their agreement: tests/unit/test_local_runtimes.py).


def test_local_embedder_is_available() -> None:
    assert local_embedder_available()


def test_importing_embeddings_does_not_import_torch_or_onnxruntime() -> None:
    code = (
        "import sys, app.embeddings; print(sorted({'torch', 'onnxruntime', 'tokenizers'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        cwd=REPO_ROOT,
        check=True,
        timeout=60,
    )
    assert result.stdout.strip() == "[]"


async def test_local_embedder_shape_and_norm(local_embedder: LocalEmbedder) -> None:
    assert isinstance(local_embedder, Embedder)
    assert local_embedder.name == "all-MiniLM-L6-v2"
    assert local_embedder.dim == 384
    assert local_embedder.thresholds == SupersedeThresholds(supersede=0.92, review=0.80)
    assert local_embedder.relevance_floor == 0.25
    assert local_embedder.fusion is Fusion.MINMAX  # docs/RANKING.md: min-max scaled beside BM25
    assert local_embedder.threads == 1
    vectors = await local_embedder.embed(SAMPLES)
    assert len(vectors) == len(SAMPLES)
    for vector in vectors:
        assert len(vector) == 384
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert await local_embedder.embed([]) == []


async def test_local_embedder_paraphrase_closer_than_unrelated(local_embedder: LocalEmbedder) -> None:
    base, paraphrase, unrelated = await local_embedder.embed(
        ["User is allergic to peanuts", "The user has a peanut allergy", "The deploy runs every Friday"]
    )
    assert cosine(base, paraphrase) > 0.8
    assert cosine(base, paraphrase) > cosine(base, unrelated) + 0.4


async def test_local_embedder_thresholds_calibration(local_embedder: LocalEmbedder) -> None:
    # The calibration the thresholds rest on: restatements auto-supersede, a changed
    # word-valued attribute does not (numbers need numeric_tokens_differ, see local.py).
    t = local_embedder.thresholds
    restated = await local_embedder.embed(["User lives in Paris", "The user lives in Paris"])
    moved = await local_embedder.embed(["I live in Paris", "I live in Berlin"])
    assert cosine(*restated) >= t.supersede
    assert cosine(*moved) < t.review


async def test_local_embedder_batch_matches_singles(local_embedder: LocalEmbedder) -> None:
    texts = SAMPLES[:3]
    batch = await local_embedder.embed(texts)
    for text, vector in zip(texts, batch, strict=True):
        (single,) = await local_embedder.embed([text])
        assert cosine(vector, single) == pytest.approx(1.0, abs=1e-5)


async def test_local_embedder_closed_raises() -> None:
    class _Never:
        runtime = "test"
        threads = 0

        closed = 0

        def encode(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("closed embedder must not encode")

        def close(self) -> None:
            self.closed += 1

    encoder = _Never()
    embedder = LocalEmbedder(encoder)
    await embedder.aclose()
    assert encoder.closed == 1  # the runtime's own threads are released with the embedder
    with pytest.raises(EmbeddingError, match="closed"):
        await embedder.embed(["x"])
    await embedder.aclose()  # idempotent
    assert encoder.closed == 1


async def test_torch_thread_setting_applies_where_it_encodes(torch_embedder: LocalEmbedder) -> None:
    """torch's thread count is per thread under OpenMP: the embedder sets it on the thread that encodes,
    and the vectors are those of torch's default (one thread changes the arithmetic's order only)."""
    import torch

    from app.embeddings.torch_encoder import TorchEncoder

    seen: list[int] = []

    class Recording:
        def __init__(self, model: Any) -> None:
            self.model = model

        def encode(self, *args: Any, **kwargs: Any) -> Any:
            seen.append(torch.get_num_threads())
            return self.model.encode(*args, **kwargs)

    inner = torch_embedder._encoder.model  # type: ignore[union-attr]
    one = LocalEmbedder(TorchEncoder(Recording(inner), threads=1))  # type: ignore[arg-type]
    default = LocalEmbedder(TorchEncoder(Recording(inner), threads=0))  # type: ignore[arg-type]
    assert one.threads == 1
    single = await one.embed(SAMPLES[:3])
    assert seen == [1]
    reference = await default.embed(SAMPLES[:3])
    for a, b in zip(single, reference, strict=True):
        assert cosine(a, b) == pytest.approx(1.0, abs=1e-5)
    await one.aclose()
    await default.aclose()


async def test_only_an_api_model_is_remote(local_embedder: LocalEmbedder) -> None:
    """Recall reads its text half while a remote model embeds (docs/RANKING.md), never beside a local one."""
    import openai

    from app.embeddings.cache import QueryEmbeddingCache
    from app.embeddings.openai_compat import OpenAICompatEmbedder

    api = OpenAICompatEmbedder(openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9"), "m", dim=8)
    assert api.remote is True
    assert QueryEmbeddingCache(api, size=4, ttl_s=60).remote is True  # a wrapper is its model's
    assert HashEmbedder().remote is False
    assert local_embedder.remote is False
    assert QueryEmbeddingCache(HashEmbedder(), size=4, ttl_s=60).remote is False
    await api.aclose()
