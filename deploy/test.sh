#!/usr/bin/env bash
# Install what the tests need into .venv (the service and the SDK), then run ruff, mypy (strict on app/
# and the SDK) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c deploy/constraints.txt -e '.[dev,local,bench,otel]' \
  -e sdk/python
# browser tests: chromium
# tests/browser drive Debian's chromium through Playwright (which cannot download a browser here). Without
# it they fail with a message saying so; they are never skipped.
if [ ! -x /usr/bin/chromium ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    echo "== installing chromium (apt-get) for the browser tests"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null \
        || echo "!! chromium could not be installed: the browser tests will fail"
fi
# end browser tests: chromium
echo "== ruff"; .venv/bin/ruff check . && .venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest"; .venv/bin/pytest -q -p no:cacheprovider "$@"
