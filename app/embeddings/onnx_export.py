"""An ONNX export of the installed local model, made on this machine and kept under the data dir.

Nothing is downloaded: the graph is traced from the installed weights with torch's TorchScript-based
exporter (`torch.onnx.export(..., dynamo=False)`, which needs the ``onnx`` package only) the first
time the ONNX runtime is asked for, and cached as ``<cache>/<model>-<key>.onnx`` beside a JSON record.
The key hashes the weights, the model's config and pipeline files and this module's export format, so
changed weights (or a changed export) make a new file instead of reusing a stale one.

The export runs in a child process (``python -m app.embeddings.onnx_child``: tracing holds the GIL
for seconds). It is accepted only if its embeddings of a fixed set of texts (batched and one by one)
are within `MIN_COSINE` of sentence-transformers' on the same weights; the reference vectors are kept
in the record, and an export is checked against them again every time it is loaded. A failed check
raises `OnnxUnavailable` and the caller falls back to torch. Concurrent starts (``--workers N``)
export once: the export runs under an exclusive file lock, and files appear by atomic rename.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from app.embeddings.onnx_encoder import INPUTS, OUTPUT, TOKENS, OnnxEncoder
from app.embeddings.torch_encoder import load_sentence_transformer, offline_hub
from app.lib.logging import get_logger

__all__ = [
    "CHECK_TEXTS",
    "MIN_COSINE",
    "OnnxUnavailable",
    "pipeline_max_length",
    "prepare_onnx",
    "weights_key",
]

log = get_logger("engram.embeddings")

# The accuracy bound of the faster runtime (issue 26): every cosine with torch's vector >= 1 - 1e-3.
MIN_COSINE = 1.0 - 1e-3
# Bump when the exported graph changes (inputs, pooling, opset): old cache files are then ignored.
EXPORT_FORMAT = 2  # 2: the token vectors too (passages are pooled from them)
OPSET = 17
CHILD = "app.embeddings.onnx_child"  # the export's entry point (a module the package never imports)
EXPORT_TIMEOUT_S = 900  # a first start on a loaded 2-core box took 25 s
PIPELINE = [
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
]
# Checked at export and at every load: short and long (past 256 tokens), unicode, empty, digits.
CHECK_TEXTS = [
    "which frontend framework do we use?",
    "",
    "User is allergic to peanuts",
    "Der Nutzer wohnt in München und trinkt gern Kaffee. Ünïcödé, 日本語のテキスト, emoji 🎉.",
    "The deploy target is AWS us-east-1; the database is PostgreSQL 17 with pgvector 0.8.",
    " ".join(
        f"Paragraph sentence {i} says the team ships on Fridays, reviews on Mondays." for i in range(40)
    ),
]


class OnnxUnavailable(Exception):
    """The ONNX runtime cannot serve this model (missing package, unexpected pipeline, failed check)."""


def pipeline_max_length(model_dir: Path) -> int:
    """The model's max sequence length, after checking the pipeline is transformer -> mean -> normalise
    (what the exported graph computes); anything else is `OnnxUnavailable`."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
    except (OSError, ValueError) as exc:
        raise OnnxUnavailable(f"the model's pipeline files are unreadable: {exc}") from exc
    if [m.get("type") for m in modules] != PIPELINE:
        raise OnnxUnavailable("the model's pipeline is not transformer, pooling, normalize")
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        raise OnnxUnavailable(f"the model pools by {sorted(modes)}, not by the mean of its tokens")
    return int(config["max_seq_length"])


def _weights_file(model_dir: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (model_dir / name).is_file():
            return model_dir / name
    raise OnnxUnavailable(f"no weights file in {model_dir}")


def weights_key(model_dir: Path) -> str:
    """16 hex digits over the export format, the pipeline files and the weights."""
    digest = hashlib.sha256(f"engram-onnx-export-{EXPORT_FORMAT}-opset-{OPSET}\n".encode())
    names = ["config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"]
    for path in [*(model_dir / n for n in names), _weights_file(model_dir)]:
        with path.open("rb") as handle:
            digest.update(f"{path.name} {hashlib.file_digest(handle, 'sha256').hexdigest()}\n".encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _exclusive(lock_file: Path) -> Iterator[None]:
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cosines(got: Sequence[Sequence[float]], want: Sequence[Sequence[float]]) -> list[float]:
    return [sum(a * b for a, b in zip(x, y, strict=True)) for x, y in zip(got, want, strict=True)]


def _check(encoder: OnnxEncoder, texts: list[str], reference: list[list[float]]) -> float:
    """The lowest cosine with the reference, batched and one by one; below `MIN_COSINE` raises."""
    singles = [encoder.encode([t])[0] for t in texts]
    lowest = min(_cosines(encoder.encode(texts), reference) + _cosines(singles, reference))
    if not lowest >= MIN_COSINE:  # also refuses NaN
        raise OnnxUnavailable(f"the export's embeddings differ from torch's: lowest cosine {lowest:.6f}")
    return lowest


def prepare_onnx(
    model_dir: Path, cache_dir: Path, *, name: str, threads: int, batch_size: int = 64, parallel: int = 1
) -> OnnxEncoder:
    """An encoder on the cached export of `model_dir` (`name`-`key`.onnx under `cache_dir`), exporting
    and checking it first when there is none or the cached one fails its check."""
    max_length = pipeline_max_length(model_dir)
    key = weights_key(model_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    graph = cache_dir / f"{name}-{key}.onnx"
    record_file = graph.with_suffix(".json")

    def encoder(path: Path) -> OnnxEncoder:
        tokenizer = model_dir / "tokenizer.json"
        return OnnxEncoder(
            path,
            tokenizer,
            max_seq_length=max_length,
            threads=threads,
            batch_size=batch_size,
            parallel=parallel,
        )

    with _exclusive(graph.with_suffix(".lock")):
        if graph.is_file() and record_file.is_file():
            try:
                return _load_checked(encoder, graph, record_file)[0]
            except Exception as exc:  # noqa: BLE001 - a damaged file, or an onnxruntime that computes otherwise
                log.warning(
                    "onnx_cached_export_rejected", reason=f"{type(exc).__name__}: {exc}", path=str(graph)
                )
        started = time.perf_counter()
        _export_in_child(model_dir, graph, record_file, key)
        try:
            loaded, lowest = _load_checked(encoder, graph, record_file)
        except Exception:
            graph.unlink(missing_ok=True)  # refused here: not kept for the next start either
            record_file.unlink(missing_ok=True)
            raise
        log.info("onnx_exported", path=str(graph), seconds=round(time.perf_counter() - started, 2),
                 lowest_cosine=round(lowest, 7))  # fmt: skip
        return loaded


def _load_checked(
    encoder: Callable[[Path], OnnxEncoder], graph: Path, record_file: Path
) -> tuple[OnnxEncoder, float]:
    """The export at `graph`, checked against the reference vectors of its record."""
    record = json.loads(record_file.read_text())
    if record.get("format") != EXPORT_FORMAT:
        raise OnnxUnavailable(f"the record is of export format {record.get('format')}, not {EXPORT_FORMAT}")
    loaded = encoder(graph)
    return loaded, _check(loaded, record["texts"], record["vectors"])


def _export_in_child(model_dir: Path, graph: Path, record_file: Path, key: str) -> None:
    """Run the export in a process of its own: tracing holds the GIL for seconds at a time, which would
    stall this process's event loop (and a worker's health check: uvicorn kills a worker that does not
    answer within 5 s); torch's exporter and the reference model also stay out of the service's memory.
    Its stderr is this process's (JSON log lines); its stdout, the outcome."""
    command = [sys.executable, "-m", CHILD, str(model_dir), str(graph), str(record_file), key]
    quiet = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false"}
    try:
        done = subprocess.run(  # noqa: S603 - this interpreter, this module, paths we chose
            command,
            stdout=subprocess.PIPE,
            text=True,
            timeout=EXPORT_TIMEOUT_S,
            check=False,
            env={**os.environ, **quiet},
        )
    except subprocess.TimeoutExpired as exc:
        raise OnnxUnavailable(f"the export took longer than {EXPORT_TIMEOUT_S} s") from exc
    lines = done.stdout.strip().splitlines()
    try:
        outcome = json.loads(lines[-1]) if lines else {}
    except ValueError:
        outcome = {}
    if done.returncode != 0 or "lowest_cosine" not in outcome:
        reason = outcome.get("error", "no outcome reported")
        raise OnnxUnavailable(f"the export failed (exit {done.returncode}): {reason}")


def export_files(model_dir: Path, graph: Path, record_file: Path, key: str) -> float:
    """Export `model_dir` to `graph` and its record, checked against sentence-transformers on the same
    weights before either appears under its name; the lowest cosine of the check."""
    reference = load_sentence_transformer(model_dir)
    vectors: list[list[float]] = reference.encode(
        CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    ).tolist()
    max_length = pipeline_max_length(model_dir)
    partial = graph.with_name(f"{graph.name}.{os.getpid()}.partial")
    try:
        export_graph(model_dir, partial)
        trial = OnnxEncoder(partial, model_dir / "tokenizer.json", max_seq_length=max_length, threads=1)
        lowest = _check(trial, CHECK_TEXTS, vectors)
        os.replace(partial, graph)
    finally:
        partial.unlink(missing_ok=True)
    record = {"key": key, "format": EXPORT_FORMAT, "opset": OPSET, "texts": CHECK_TEXTS, "vectors": vectors}
    partial_record = record_file.with_name(f"{record_file.name}.{os.getpid()}.partial")
    partial_record.write_text(json.dumps(record))
    os.replace(partial_record, record_file)
    return lowest


def export_graph(model_dir: Path, target: Path) -> None:
    """Trace the model with pooling and normalisation into an ONNX graph at `target` (needs torch, onnx)."""
    offline_hub()
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    # Eager attention: a plain graph of matmuls and softmax, the same arithmetic as the pipeline's.
    transformer = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    )

    class Pooled(torch.nn.Module):
        """The transformer, the mean over attended tokens (sentence-transformers' Pooling), L2 norm; and
        the token vectors themselves."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1), hidden

    # Sample inputs of two lengths, so the traced graph sees padding and a real mask.
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.enable_padding()
    samples = tokenizer.encode_batch(["a sample sentence to trace the model with", "short"])
    args = tuple(
        torch.tensor([getattr(e, field) for e in samples], dtype=torch.long)
        for field in ("ids", "attention_mask", "type_ids")
    )
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer warnings go to stderr, which carries JSON lines only
        torch.onnx.export(
            Pooled(transformer.eval()).eval(),
            args,
            str(target),
            dynamo=False,
            input_names=list(INPUTS),
            output_names=[OUTPUT, TOKENS],
            dynamic_axes={**axes, OUTPUT: {0: "batch"}, TOKENS: {0: "batch", 1: "sequence"}},
            opset_version=OPSET,
            do_constant_folding=True,
        )
