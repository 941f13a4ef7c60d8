"""Memory quality at a token budget: Engram against baselines on synthetic personas, LoCoMo, BEAM, the
neutral JSON format and the predecessors' cases. Run `python -m bench.quality --help`."""
