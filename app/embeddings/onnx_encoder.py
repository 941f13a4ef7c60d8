"""The local model's exported graph run by onnxruntime, tokenised by the model's own fast tokenizer.

The graph (made by `app.embeddings.onnx_export`) takes the tokenizer's ids, attention mask and token
types and returns the sentence embedding: the transformer, mean pooling over the attended tokens and
L2 normalisation, as sentence-transformers' pipeline for this model does; and every token's vector (the
transformer's last hidden state), from which `encode_spans` pools a long text's passages
(`app.embeddings.spans`). Texts are tokenised as that
pipeline tokenises them: the model's ``tokenizer.json``, truncated to its ``max_seq_length`` (256 for
all-MiniLM-L6-v2), padded to the longest text of each model call.

How texts are cut into model calls: sorted by token count, then cut so that no call computes more than
`MAX_BATCH_TOKENS` padded tokens (rows x the longest row; a text longer than that runs alone) or more
than `batch_size` rows. The token bound is what matters on a CPU: a call's activations grow with rows x
tokens, and once they no longer fit in the core's cache every matrix product waits on memory. On the
development machine (1 MiB of L2 per core), 100 facts of ~93 tokens cost 47.8 ms of CPU a fact in calls
of up to 64 rows, 22.4 ms in calls of up to 256 tokens; 64 short queries, 10.2 ms a query in one call,
6.1 ms in calls of up to 256 tokens, and 7.6 ms one by one (docs/PERFORMANCE.md).

How the calls of one encode run: one at a time on the calling thread, or, with ``parallel`` > 1, on that
many threads at once (each call on ``threads`` intra-op threads). The session runs concurrent calls
safely and releases the GIL while it computes, so a batch write uses every core where intra-op threads
split each small matrix product too finely to pay: 100 facts of ~97 tokens, 11.7 ms a fact on one
thread, 8.6 on one call's two intra-op threads, 6.1 on two calls at once (2 cores). A one-call encode (a
query) never leaves the calling thread.

``onnxruntime`` and ``tokenizers`` are imported inside the constructor (the ``local`` extra).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from app.embeddings.base import Spanned, SpanVectors
from app.embeddings.spans import Pooled, pool_spans, with_apart

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["MAX_BATCH_TOKENS", "OnnxEncoder", "calls", "session_options"]

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "embedding"
TOKENS = "tokens"
# Padded tokens one model call may compute (rows x the longest row): flat from 256 to 512 on the
# development machine, 7% slower at 1024, 20% at 2048 (CPU time per fact, one intra-op thread).
MAX_BATCH_TOKENS = 256

T = TypeVar("T")


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
        parallel: int = 1,
    ) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        ort.set_default_logger_severity(3)
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        padding: dict[str, Any] = tokenizer.padding or {}
        tokenizer.enable_truncation(max_seq_length)
        # tokenizer.json may pad to a fixed length; texts are padded here, to each call's longest text.
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._pad_id = int(padding.get("pad_id", 0))
        self._pad_type_id = int(padding.get("pad_type_id", 0))
        self._session = ort.InferenceSession(
            str(model_file), session_options(threads), providers=["CPUExecutionProvider"]
        )
        names = {node.name for node in self._session.get_inputs()}
        if names != set(INPUTS):
            raise ValueError(f"the exported graph takes {sorted(names)}, expected {sorted(INPUTS)}")
        outputs = {node.name for node in self._session.get_outputs()}
        if outputs != {OUTPUT, TOKENS}:
            raise ValueError(f"the exported graph returns {sorted(outputs)}, expected {[OUTPUT, TOKENS]}")
        self.threads = threads
        self.batch_size = batch_size
        self.max_batch_tokens = MAX_BATCH_TOKENS
        self.max_seq_length = max_seq_length
        self.parallel = max(1, parallel)
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Let the threads of parallel calls end (idempotent; the encoder stays usable, on one thread)."""
        pool, self._pool, self.parallel = self._pool, None, 1
        if pool is not None:
            pool.shutdown(wait=False)

    def _each(self, chunks: list[list[int]], call: Callable[[list[int]], T]) -> Iterator[T]:
        """`call` of every chunk, in order: on the calling thread, or on `parallel` threads at once."""
        if self.parallel == 1 or len(chunks) == 1:
            return map(call, chunks)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="engram-onnx")
        return self._pool.map(call, chunks)

    def encode(self, texts: list[str]) -> list[list[float]]:
        """Unit-norm vectors of `texts`, in order."""
        encodings = self._tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        vectors: list[list[float]] = [[] for _ in texts]

        def call(chunk: list[int]) -> list[list[float]]:
            (embedding,) = self._run([encodings[i] for i in chunk], [OUTPUT])
            rows: list[list[float]] = embedding.tolist()
            return rows

        chunks = calls(lengths, self.max_batch_tokens, self.batch_size)
        for chunk, rows in zip(chunks, self._each(chunks, call), strict=True):
            for index, row in zip(chunk, rows, strict=True):
                vectors[index] = row
        return vectors

    def encode_spans(self, items: list[Spanned]) -> list[SpanVectors]:
        """Each text's vector (as `encode` gives it) and its spans' vectors, pooled from the same model
        call's token vectors; spans past the model's sequence length are encoded on their own."""
        encodings = self._tokenizer.encode_batch([item.text for item in items])
        lengths = [len(e.ids) for e in encodings]
        pooled: list[Pooled] = [([], []) for _ in items]

        def call(chunk: list[int]) -> list[Pooled]:
            embedding, hidden = self._run([encodings[i] for i in chunk], [OUTPUT, TOKENS])
            out: list[Pooled] = []
            for row, index in enumerate(chunk):
                e = encodings[index]
                vectors = pool_spans(
                    hidden[row, : len(e.ids)],
                    e.offsets,
                    e.special_tokens_mask,
                    items[index].spans,
                    complete=not e.overflowing,
                )
                out.append((embedding[row].tolist(), vectors))
            return out

        chunks = calls(lengths, self.max_batch_tokens, self.batch_size)
        for chunk, results in zip(chunks, self._each(chunks, call), strict=True):
            for index, result in zip(chunk, results, strict=True):
                pooled[index] = result
        return with_apart(items, pooled, self.encode)

    def _run(self, encodings: list[Any], outputs: list[str]) -> list[np.ndarray[Any, np.dtype[np.float32]]]:
        """One model call over tokenised texts, padded to the longest of them; the `outputs` named."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.full((len(encodings), width), self._pad_type_id, dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = e.attention_mask
            types[row, :n] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        result: list[np.ndarray[Any, np.dtype[np.float32]]] = self._session.run(outputs, feeds)
        return result


def calls(lengths: list[int], max_tokens: int, max_rows: int) -> list[list[int]]:
    """Indexes of texts (by their token counts) grouped into model calls: longest first, each call at
    most `max_rows` rows and `max_tokens` padded tokens (a text longer than that alone)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out: list[list[int]] = []
    for index in order:
        current = out[-1] if out else None
        # Longest first: a call's width is its first text's length.
        full = current is not None and (
            len(current) >= max_rows or (len(current) + 1) * lengths[current[0]] > max_tokens
        )
        if current is None or full:
            out.append([index])
        else:
            current.append(index)
    return out
