"""The speed bench's report: the tables and both plots come from the results payload alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.perf.report import load_series, main, render

PNG = b"\x89PNG\r\n\x1a\n"


def dataset(name: str, rps: dict[int, float]) -> dict[str, Any]:
    d: dict[str, Any] = {
        "spec": {"name": name},
        "largest_scope": 600,
        "floor_ms": {"p50": 1.0, "p95": 4.0},
        "in_process_ms": {"p50": 2.0, "p95": 6.0},
        "http_ms": {"p50": 3.0, "p95": 9.0},
        "exactness": {"mean": 1.0, "min": 1.0},
        "copy_rows_per_s": 400.0,
        "writes": {"batch_rows_per_s": 100.0, "single_rows_per_s": 40.0},
        "peak_rss_mb": 190.0,
    }
    # Stored out of order, as a dict may hold them: the series must come back sorted by clients.
    for clients in sorted(rps, reverse=True):
        for kind, scale in (("recall", 1.0), ("remember", 0.5)):
            d[f"load_{kind}_{clients}"] = {
                "clients": clients,
                "rps": rps[clients] * scale,
                "p50": 10.0 * clients,
                "p99": 30.0 * clients,
                "errors": 0,
            }
    return d


def payload() -> dict[str, Any]:
    return {
        "machine": {"cpus": 2, "python": "3.11", "when": "now"},
        "datasets": [dataset("10k", {1: 70.0, 16: 140.0, 64: 141.0}), dataset("100k", {1: 45.0, 64: 77.0})],
    }


def test_load_series_is_ordered_by_clients_and_kept_apart_per_kind() -> None:
    d = payload()["datasets"][0]

    assert load_series(d, "recall") == ([1, 16, 64], [70.0, 140.0, 141.0], [30.0, 480.0, 1920.0])
    assert load_series(d, "remember") == ([1, 16, 64], [35.0, 70.0, 70.5], [30.0, 480.0, 1920.0])
    assert load_series(d, "erase") == ([], [], [])


def test_render_writes_the_summary_and_both_plots(tmp_path: Path) -> None:
    markdown = render(payload(), bench_dir=tmp_path)

    assert (tmp_path / "summary.md").read_text() == markdown
    assert "| 100k | 600 | 1.0 / 4.0 | 2.0 / 6.0 | 3.0 / 9.0 | 1.50x | 2.25x | 1.0 (1.0) |" in markdown
    assert "| 100k | remember | 64 | 38.5 | 640.0 | 1920.0 | 0 |" in markdown
    assert "| 10k | 400.0 | 100.0 | 25% | 40.0 |" in markdown
    for plot in ("recall_latency.png", "load.png"):
        assert (tmp_path / plot).read_bytes().startswith(PNG), plot


def test_a_saved_results_file_is_rendered_again_beside_it(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(payload()))

    main([str(results)])

    assert "| 10k | recall | 16 | 140.0 |" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "load.png").read_bytes().startswith(PNG)
