"""The local model's ONNX runtime against torch: the same vectors (cosine >= 1 - 1e-3 on every text), the
export made once per weights and reused, refused and replaced when damaged, and torch when it cannot
serve the model."""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from app.embeddings import LocalEmbedder
from app.embeddings.base import EmbedderWrapper
from app.embeddings.factory import build_embedder
from app.embeddings.local import MODEL_NAME, bundled_model_path
from app.embeddings.onnx_export import (
    CHECK_TEXTS,
    MIN_COSINE,
    OnnxUnavailable,
    _check,
    pipeline_max_length,
    weights_key,
)
from app.lib.settings import Settings

ASKED = [
    "which frontend framework do we use?",
    "Where do I live?",
    "suggest a dinner dish",
    "Any dinner ideas?",
    "what time is standup",
    "is the user allergic to anything",
    "WHAT DATABASE",
    "deploy region?",
    "who is Alice's manager and when did they start",
    "remind me what we decided about the API keys last week",
]
SUBJECTS = [
    "the frontend",
    "my sister",
    "the deploy",
    "our database",
    "the standup",
    "Alice",
    "dinner",
    "the API",
]
ASKS = ["what about", "when is", "who owns", "how do we handle", "where is"]
UNICODE = [
    "Der Nutzer wohnt in München und fährt gern Fahrrad.",
    "L'utilisateur préfère le café crème à Noël.",
    "El usuario vive en España y habla español.",
    "Пользователь живёт в Москве и любит чай.",
    "Ο χρήστης μένει στην Αθήνα.",
    "用户住在北京，喜欢喝绿茶。",
    "ユーザーは東京に住んでいて、寿司が好きです。",
    "사용자는 서울에 살고 김치를 좋아합니다.",
    "المستخدم يعيش في القاهرة ويحب القهوة.",
    "המשתמש גר בתל אביב.",
    "उपयोगकर्ता दिल्ली में रहता है।",
    "ผู้ใช้อาศัยอยู่ในกรุงเทพ",
    "Emoji only: 🎉🚀🔥👍🏽👩‍💻",
    "Combining marks: e\u0301 a\u0308 n\u0303 and precomposed é ä ñ",
    "Full-width: ＡＢＣ１２３ and math ∑∫√∞ ≤ ≥ ≠",
    "Zero\u200bwidth\u200bspaces and a\u00a0non-breaking space",
    "Ünïcödé wïth dïäcrïtïcs ëvërywhërë",
    "Mixed 日本 and English and Ελληνικά in one line",
    "Türkçe: İstanbul'da yaşıyor, ığdır şçö",
    "Polski: Zażółć gęślą jaźń",
]
EMPTY_ISH = ["", " ", "\n", "\t", "   \n  ", ".", "?", "!!!", "...", "-", "\u200b", "\u00a0", "a", "I", "0",
             "[PAD]", "[CLS] [SEP]", "[MASK]", "<unk>", "ok"]  # fmt: skip
MIXED = [
    "def main():\n    return {'key': [1, 2, 3]}",
    "SELECT id FROM users WHERE name = 'x';",
    "https://example.com/path?query=1&b=2#frag",
    "alice@example.org wrote to bob+tag@example.net",
    '{"user": "alice", "prefs": {"theme": "dark"}}',
    "# Heading\n\n- bullet one\n- bullet **two**",
    "ALL CAPS SHOUTING ABOUT THE DEPLOY",
    "repeat repeat repeat repeat repeat repeat repeat",
    "v1.2.3-rc.4+build.567 on eu-west-1 at 09:30",
    "The user is 34 years old and was born on 1992-03-14.",
]
WORDS = ["the", "team", "ships", "on", "friday", "reviews", "monday", "database", "migration", "latency", "budget", "memory", "user", "prefers", "dark", "mode", "editor", "vegetarian", "dinner", "lisbon", "porto", "standup", "nine", "thirty", "deploy", "region", "postgres", "index", "vector", "recall", "token", "cosine", "threshold", "supersede", "review", "proposal"]  # fmt: skip


def varied_texts() -> list[str]:
    """A fixed set of 200+ texts: queries, facts, unicode, empty-ish strings, code, and paragraphs from
    a few sentences to far past 256 tokens (seeded, so every run embeds the same texts)."""
    rng = random.Random(26)
    queries = [f"{ask} {subject}?" for ask in ASKS for subject in SUBJECTS]
    facts = [
        f"{s.capitalize()} {v} {n}" for s in SUBJECTS for v, n in (("has", "3 items"), ("is at", "9:30"))
    ]
    paragraphs = []
    for i in range(90):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."
            for _ in range(rng.randint(2, 12) if i < 50 else rng.randint(25, 80))
        ]
        paragraphs.append(" ".join(sentences))
    paragraphs.append("word " * 1600)  # the service's longest content: 8000 characters
    paragraphs.append(" ".join(UNICODE) * 4)  # unicode past 256 tokens
    paragraphs.append("東京の天気は晴れです。" * 60)
    return queries + ASKED + facts + UNICODE + EMPTY_ISH + MIXED + paragraphs


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def listing(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern))


def token_count(text: str) -> int:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return len(tokenizer.encode(text).ids)


async def test_onnx_and_torch_agree_on_every_text_within_the_bound(
    onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder
) -> None:
    texts = varied_texts()
    assert len(texts) >= 200
    assert sum(token_count(t) > 256 for t in texts) >= 30  # truncation is exercised, not just short texts
    torch_vectors = await torch_embedder.embed(texts)
    batched = await onnx_embedder.embed(texts)  # sorted by length, padded per batch
    singles = [(await onnx_embedder.embed([t]))[0] for t in texts]  # no padding at all
    for name, vectors in (("batched", batched), ("single", singles)):
        cosines = [cosine(a, b) for a, b in zip(vectors, torch_vectors, strict=True)]
        worst = min(range(len(texts)), key=cosines.__getitem__)
        assert cosines[worst] >= 1 - 1e-3, f"{name}: cosine {cosines[worst]:.6f} on {texts[worst][:60]!r}"


def test_the_pipeline_is_what_the_export_computes() -> None:
    path = bundled_model_path()
    assert pipeline_max_length(path) == 256  # modules.json: transformer, mean pooling, normalize


async def test_the_export_is_kept_by_weights_key_and_reused(
    onnx_embedder: LocalEmbedder, onnx_cache: Path
) -> None:
    key = weights_key(bundled_model_path())
    graph = onnx_cache / f"{MODEL_NAME}-{key}.onnx"
    assert listing(onnx_cache, "*.onnx") == [graph]
    record = json.loads(graph.with_suffix(".json").read_text())
    assert record["key"] == key
    assert record["texts"] == CHECK_TEXTS
    made = graph.stat().st_mtime_ns
    with capture_logs() as logs:
        again = await LocalEmbedder.load(threads=1, cache_dir=onnx_cache)
    try:
        assert again.runtime == "onnx"
        assert graph.stat().st_mtime_ns == made
        assert "onnx_exported" not in [entry["event"] for entry in logs]
        assert [entry["runtime"] for entry in logs if entry["event"] == "local_embedder_loaded"] == ["onnx"]
        (vector,) = await again.embed(["the same vector from the same file"])
        (expected,) = await onnx_embedder.embed(["the same vector from the same file"])
        assert vector == pytest.approx(expected, abs=1e-6)
    finally:
        await again.aclose()


def test_changed_weights_or_config_change_the_key(tmp_path: Path) -> None:
    source = bundled_model_path()
    copy = tmp_path / "model"
    shutil.copytree(source, copy)
    original = weights_key(copy)
    assert original == weights_key(source)
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # one bit of the last weight
    weights.write_bytes(bytes(data))
    changed = weights_key(copy)
    assert changed != original
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}))
    assert weights_key(copy) not in {original, changed}


async def test_a_damaged_cached_export_is_refused_and_made_again(
    onnx_embedder: LocalEmbedder, onnx_cache: Path, tmp_path: Path
) -> None:
    for made in listing(onnx_cache, "*.json"):
        shutil.copy(made, tmp_path / made.name)
        (tmp_path / made.with_suffix(".onnx").name).write_bytes(b"not a model")
    with capture_logs() as logs:
        embedder = await LocalEmbedder.load(threads=1, cache_dir=tmp_path)
    try:
        events = [entry["event"] for entry in logs]
        assert "onnx_cached_export_rejected" in events
        assert "onnx_exported" in events
        assert embedder.runtime == "onnx"
        (vector,) = await embedder.embed(["made again from the weights"])
        (expected,) = await onnx_embedder.embed(["made again from the weights"])
        assert cosine(vector, expected) >= 1 - 1e-6
    finally:
        await embedder.aclose()


def test_the_check_refuses_vectors_that_are_not_the_models(
    onnx_embedder: LocalEmbedder, onnx_cache: Path
) -> None:
    encoder = onnx_embedder._encoder
    (record_file,) = listing(onnx_cache, "*.json")
    record = json.loads(record_file.read_text())
    assert _check(encoder, record["texts"], record["vectors"]) >= MIN_COSINE  # type: ignore[arg-type]
    shifted = record["vectors"][1:] + record["vectors"][:1]  # every text paired with another's vector
    with pytest.raises(OnnxUnavailable, match="lowest cosine"):
        _check(encoder, record["texts"], shifted)  # type: ignore[arg-type]


async def test_a_pipeline_the_export_does_not_compute_falls_back_to_torch_with_a_warning(
    tmp_path: Path,
) -> None:
    source = bundled_model_path()
    model = tmp_path / "cls-pooled"
    shutil.copytree(source, model, ignore=shutil.ignore_patterns("model.safetensors"))
    (model / "model.safetensors").symlink_to(source / "model.safetensors")
    pooling = json.loads((model / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    cache = tmp_path / "cache"
    with capture_logs() as logs:
        embedder = await LocalEmbedder.load(model, threads=1, runtime="onnx", cache_dir=cache)
    try:
        assert embedder.runtime == "torch"
        (warning,) = [entry for entry in logs if entry["event"] == "local_onnx_unavailable"]
        assert warning["log_level"] == "warning"
        assert warning["fallback"] == "torch"
        assert "mean of its tokens" in warning["reason"]
        assert not listing(cache, "*.onnx")
        (vector,) = await embedder.embed(["still embeds, with the model's own pooling"])
        assert math.isclose(cosine(vector, vector), 1.0, abs_tol=1e-5)
    finally:
        await embedder.aclose()


def test_the_torch_runtime_makes_no_export(torch_embedder: LocalEmbedder, torch_cache: Path) -> None:
    assert torch_embedder.runtime == "torch"
    assert not any(torch_cache.iterdir())


def test_the_runtime_setting_is_onnx_by_default_and_checked() -> None:
    assert Settings().local_runtime == "onnx"
    assert Settings(local_runtime="torch").local_runtime == "torch"
    with pytest.raises(ValidationError):
        Settings(local_runtime="tensorflow")  # type: ignore[arg-type]


async def test_the_service_keeps_its_export_under_the_data_dir(onnx_cache: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(onnx_cache, models)
    made = {p.name: p.stat().st_mtime_ns for p in listing(models, "*.onnx")}
    built = await build_embedder(Settings(embedder="local", data_dir=tmp_path, local_threads=1))
    try:
        assert isinstance(built, EmbedderWrapper)
        inner = built.inner
        assert isinstance(inner, LocalEmbedder)
        assert inner.runtime == "onnx"
        assert inner.name == MODEL_NAME
        assert {p.name: p.stat().st_mtime_ns for p in listing(models, "*.onnx")} == made  # reused
    finally:
        await built.aclose()
