"""The local model through sentence-transformers and torch: the reference pipeline, and the fallback runtime.

``sentence_transformers`` (and with it torch) is imported inside the functions: importing
``app.embeddings`` must stay cheap and work on installs without the ``local`` extra.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.embeddings.base import Spanned, SpanVectors, l2_normalise
from app.embeddings.spans import Pooled, pool_spans, with_apart

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["TorchEncoder", "load_sentence_transformer", "offline_hub", "set_torch_threads"]


def offline_hub() -> None:
    """Set before sentence_transformers/huggingface_hub/transformers read them: loading never reaches
    for the network (no hub access in production or CI), even for metadata."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def load_sentence_transformer(path: Path) -> SentenceTransformer:
    """The model at `path` on the CPU, from local files only."""
    offline_hub()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


def set_torch_threads(threads: int) -> None:
    """torch's intra-op thread count for the calling thread (0: leave torch's default, one per core).

    With torch's OpenMP backend the count is a per-thread setting: it must be applied on the thread
    that encodes, not once at startup on another thread.
    """
    if threads > 0:
        import torch

        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


class TorchEncoder:
    """`SentenceTransformer.encode` with the configured thread count, on the calling thread."""

    runtime = "torch"

    def __init__(
        self,
        model: SentenceTransformer,
        *,
        threads: int = 0,
        batch_size: int = 64,
        tokenizer_file: Path | None = None,
    ) -> None:
        self.model = model
        self.threads = threads
        self.batch_size = batch_size
        self._tokenizer_file = tokenizer_file  # the model's tokenizer.json: `encode_spans` needs offsets
        self._tokenizer: Any = None

    def close(self) -> None:
        """Nothing to release: each encode runs on the calling thread (torch's pool is process-wide)."""

    def encode(self, texts: list[str]) -> list[list[float]]:
        """Unit-norm vectors of `texts`, in order."""
        set_torch_threads(self.threads)  # on this thread: the setting is per thread
        array = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        vectors: list[list[float]] = array.tolist()
        return vectors

    def encode_spans(self, items: list[Spanned]) -> list[SpanVectors]:
        """Each text's vector and its spans', pooled from the transformer's token vectors of the text
        (one text a call: this is the fallback runtime); spans past the sequence length on their own."""
        import torch

        set_torch_threads(self.threads)
        tokenizer = self._offsets_tokenizer()
        transformer: Any = self.model[0].auto_model
        pooled: list[Pooled] = []
        for item in items:
            e = tokenizer.encode(item.text)
            fields = {"input_ids": e.ids, "attention_mask": e.attention_mask, "token_type_ids": e.type_ids}
            with torch.inference_mode():
                out = transformer(**{name: torch.tensor([v]) for name, v in fields.items()})
            hidden = out.last_hidden_state[0].float().numpy()
            vector = l2_normalise(hidden.astype("float64").mean(axis=0).tolist())
            spans = pool_spans(
                hidden, e.offsets, e.special_tokens_mask, item.spans, complete=not e.overflowing
            )
            pooled.append((vector, spans))
        return with_apart(items, pooled, self.encode)

    def _offsets_tokenizer(self) -> Any:
        """The model's fast tokenizer, truncating as the pipeline does, with character offsets."""
        if self._tokenizer is None:
            if self._tokenizer_file is None:
                raise ValueError("encode_spans needs the model's tokenizer.json")
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
            tokenizer.enable_truncation(int(self.model.max_seq_length or 512))
            tokenizer.no_padding()
            self._tokenizer = tokenizer
        return self._tokenizer
