#!/usr/bin/env bash
# Install what the tests need into .venv (the service and the SDK), then run ruff, mypy (strict on app/
# and the SDK) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c deploy/constraints.txt -e '.[dev,local,bench]' \
  -e sdk/python
echo "== ruff"; .venv/bin/ruff check . && .venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest"; .venv/bin/pytest -q -p no:cacheprovider "$@"
