"""The local model's exported graph run by onnxruntime, tokenised by the model's own fast tokenizer.

The graph (made by `app.embeddings.onnx_export`) takes the tokenizer's ids, attention mask and token
types and returns the sentence embedding: the transformer, mean pooling over the attended tokens and
L2 normalisation, as sentence-transformers' pipeline for this model does. Texts are tokenised as that
pipeline tokenises them: the model's ``tokenizer.json``, truncated to its ``max_seq_length`` (256 for
all-MiniLM-L6-v2), padded to the longest text of each batch; a long input is sorted by length and cut
into batches, like `SentenceTransformer.encode`, so little compute goes on padding.

``onnxruntime`` and ``tokenizers`` are imported inside the constructor (the ``local`` extra).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["OnnxEncoder", "session_options"]

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "embedding"


def session_options(threads: int) -> onnxruntime.SessionOptions:
    """One encode at a time, on `threads` intra-op threads (0: onnxruntime's default, one per core).

    Sequential execution and one inter-op thread: the graph is a chain, and the service serialises
    encodes anyway. The intra-op pool does not spin while idle: on a small box its spinning threads
    take the cores PostgreSQL and the event loop need. Only errors are logged (onnxruntime's own
    logger writes to stderr, where the service writes only JSON lines).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


class OnnxEncoder:
    """Texts -> unit-norm vectors with an onnxruntime session; `encode` runs on the calling thread."""

    runtime = "onnx"

    def __init__(
        self,
        model_file: Path,
        tokenizer_file: Path,
        *,
        max_seq_length: int,
        threads: int = 0,
        batch_size: int = 64,
    ) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        ort.set_default_logger_severity(3)
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        padding: dict[str, Any] = tokenizer.padding or {}
        tokenizer.enable_truncation(max_seq_length)
        # tokenizer.json may pad to a fixed length; the pipeline pads to each batch's longest text.
        tokenizer.enable_padding(
            pad_id=int(padding.get("pad_id", 0)), pad_token=str(padding.get("pad_token", "[PAD]"))
        )
        self._tokenizer = tokenizer
        self._session = ort.InferenceSession(
            str(model_file), session_options(threads), providers=["CPUExecutionProvider"]
        )
        names = {node.name for node in self._session.get_inputs()}
        if names != set(INPUTS):
            raise ValueError(f"the exported graph takes {sorted(names)}, expected {sorted(INPUTS)}")
        self.threads = threads
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length

    def encode(self, texts: list[str]) -> list[list[float]]:
        """Unit-norm vectors of `texts`, in order."""
        # Longest first, as SentenceTransformer.encode orders them, so each batch pads little.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            rows: list[list[float]] = self._run([texts[i] for i in chunk]).tolist()
            for index, row in zip(chunk, rows, strict=True):
                vectors[index] = row
        return vectors

    def _run(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        encodings = self._tokenizer.encode_batch(texts)
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        (embedding,) = self._session.run([OUTPUT], feeds)
        result: np.ndarray[Any, np.dtype[np.float32]] = embedding
        return result
