"""`python -m app.embeddings.onnx_child MODEL_DIR GRAPH RECORD KEY`: the ONNX export in a process of its own.

`app.embeddings.onnx_export.prepare_onnx` runs it. The outcome is one JSON object on stdout
(``{"lowest_cosine": ...}`` or ``{"error": ...}``); the libraries' log lines go to stderr as the
service's JSON lines, with the parent's log settings (from the environment it passed on).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from app.embeddings.onnx_export import export_files
from app.lib.logging import configure_logging
from app.lib.settings import Settings


def main(argv: Sequence[str]) -> int:
    """Export, check, and report; 0 when the files are in place."""
    model_dir, graph, record_file, key = argv
    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)
    logging.captureWarnings(True)  # a library's warning is a log line too, not raw text on stderr
    try:
        lowest = export_files(Path(model_dir), Path(graph), Path(record_file), key)
    except Exception as exc:  # noqa: BLE001 - whatever failed, the parent falls back to torch and says why
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps({"lowest_cosine": lowest}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
