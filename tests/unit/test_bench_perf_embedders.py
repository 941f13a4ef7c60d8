"""The speed bench's embedder line: what it times and how the summary shows it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.embeddings import HashEmbedder
from bench.perf import embedders
from bench.perf.embedders import WARMUP, embedders_section, time_embedder
from bench.perf.report import _embedder_lines


class CountingEmbedder(HashEmbedder):
    """The hash embedder, remembering the size of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return await super().embed(texts)


async def test_queries_are_embedded_one_at_a_time_and_batches_whole() -> None:
    embedder = CountingEmbedder()
    queries = [f"query {i}" for i in range(WARMUP + 12)]
    batches = [[f"sentence {b} {i}" for i in range(30)] for b in range(3)]

    result = await time_embedder(embedder, queries, batches)

    assert embedder.calls == [1] * len(queries) + [30, 30, 30]
    assert result["query_ms"]["n"] == 12  # the warm-up calls are not measured
    assert result["query_ms"]["p50"] <= result["query_ms"]["p95"] <= result["query_ms"]["p99"]
    assert result["batch_rows"] == 90
    assert result["batch_rows_per_s"] > 0
    assert result["model"] == embedder.name


async def test_section_reports_a_missing_local_model_instead_of_failing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embedders, "local_embedder_available", lambda: False)

    section = await embedders_section(["hash", "local"], queries=10, batches=1, batch_size=20)

    assert section["local"] == {"available": False}
    assert section["hash"]["available"] is True
    assert section["hash"]["query_ms"]["n"] == 10
    assert section["hash"]["batch_rows"] == 20
    lines = _embedder_lines(section)
    assert lines[-1] == "| local | not installed | | | |"
    assert lines[-2].startswith(f"| hash | {HashEmbedder().name} | ")
