.PHONY: install run test lint bench-recall

install:
	python3 -m venv .venv && .venv/bin/pip install -c deploy/constraints.txt -e '.[local]' -e sdk/python

run: install
	.venv/bin/engram serve

test:
	bash deploy/test.sh

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy

bench-recall:
	.venv/bin/python -m bench.recall_latency
