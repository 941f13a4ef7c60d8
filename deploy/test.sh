#!/usr/bin/env bash
# Install what the tests need into .venv, then run ruff, mypy (strict on app/) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c deploy/constraints.txt -e '.[dev,local,bench]'

# browser tests: chromium (Debian's package; Playwright drives it, tests/browser/ fail clearly without it)
if [ -z "${CHROMIUM_PATH:-}" ] && [ ! -x /usr/bin/chromium ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null \
        || echo "chromium could not be installed: the browser tests will fail" >&2
fi
echo "== ruff"; .venv/bin/ruff check . && .venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest"; .venv/bin/pytest -q -p no:cacheprovider "$@"
