"""Speed and scale benchmark: `python -m bench.perf` (see __main__.py)."""
