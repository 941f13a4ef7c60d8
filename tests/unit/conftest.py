"""The local model's two runtimes, loaded once per session (the ONNX export is made once, here)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.embeddings import LocalEmbedder


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's ONNX export of the bundled model is made."""
    return tmp_path_factory.mktemp("onnx-models")


@pytest.fixture(scope="session")
async def onnx_embedder(onnx_cache: Path) -> AsyncIterator[LocalEmbedder]:
    embedder = await LocalEmbedder.load(threads=1, cache_dir=onnx_cache)
    yield embedder
    await embedder.aclose()


@pytest.fixture(scope="session")
def torch_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The torch embedder's cache dir: it must stay empty."""
    return tmp_path_factory.mktemp("torch-models")


@pytest.fixture(scope="session")
async def torch_embedder(torch_cache: Path) -> AsyncIterator[LocalEmbedder]:
    embedder = await LocalEmbedder.load(threads=1, runtime="torch", cache_dir=torch_cache)
    yield embedder
    await embedder.aclose()


@pytest.fixture(params=["onnx", "torch"])
def local_embedder(
    request: pytest.FixtureRequest, onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder
) -> LocalEmbedder:
    """Each runtime in turn: a test that takes this runs once on ONNX and once on torch."""
    embedder = onnx_embedder if request.param == "onnx" else torch_embedder
    assert embedder.runtime == request.param
    return embedder
