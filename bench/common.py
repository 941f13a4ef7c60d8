"""Shared benchmark plumbing: a database to measure on, percentiles, result files."""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.db.migrate import upgrade
from app.db.urls import app_role_url

RESULTS = Path(__file__).resolve().parent / "results"


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only backend (benchmarks run headless); imported on first use,
    so the rest of a bench needs no matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def bench_database() -> Iterator[tuple[str, str]]:
    """(owner_url, app_url): BENCH_DATABASE_URL if set, else a throwaway embedded server."""
    url = os.environ.get("BENCH_DATABASE_URL")
    if url:
        upgrade(url)
        yield url, app_role_url(url, "engram_app", os.environ.get("ENGRAM_APP_DB_PASSWORD"))
        return
    from app.db.embedded import start_embedded

    data_dir = Path(tempfile.mkdtemp(prefix="engram-bench-"))
    embedded = start_embedded(data_dir, cleanup_mode="delete")
    try:
        upgrade(embedded.owner_url)
        yield embedded.owner_url, app_role_url(embedded.owner_url, "engram_app", None)
    finally:
        embedded.stop()


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(samples_ms, n=100, method="inclusive")
    return {
        "n": len(samples_ms),
        "p50": round(qs[49], 2),
        "p95": round(qs[94], 2),
        "p99": round(qs[98], 2),
        "mean": round(statistics.fmean(samples_ms), 2),
    }


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def write_results(name: str, payload: dict[str, Any], markdown: str) -> Path:
    out = RESULTS / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(payload, indent=2, default=str))
    (out / "summary.md").write_text(markdown)
    return out
