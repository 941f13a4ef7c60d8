"""No log line carries a SQL statement, its parameters or stored content.

Two walls: the engine hides parameters from every error message (`hide_parameters=True`), and the log
pipeline keeps only types, SQLSTATE and frames of an error raised around a statement (the driver's own
message quotes values too). The whole suite is checked by `tests/support/logsink.py`; the last tests here
show that checker failing a run that leaks.
"""

from __future__ import annotations

import io
import json
import sys

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.errors import database_error
from app.lib.logging import configure_logging, get_logger

LEAK = "content-that-must-never-be-logged-7f3a"


async def failing_statement(engine: AsyncEngine) -> DBAPIError:
    with pytest.raises(DBAPIError) as caught:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT CAST(:value AS integer) AS n"), {"value": LEAK})
    return caught.value


async def test_the_engine_never_puts_parameters_into_an_error_message(owner_engine: AsyncEngine) -> None:
    error = await failing_statement(owner_engine)
    assert "parameters hidden" in str(error)
    assert "SELECT CAST" in str(error)  # the statement is in the message: the log pipeline drops it


async def test_a_database_error_is_logged_by_type_and_sqlstate_only(
    owner_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = await failing_statement(owner_engine)
    assert LEAK in str(error.orig)  # guard: the driver's own message quotes the value
    sink = io.StringIO()
    monkeypatch.setattr(sys, "stderr", sink)
    configure_logging("INFO", json=True)
    response = database_error(None, error)  # type: ignore[arg-type]
    get_logger("test").warning("retry_failed", exc_info=error)
    assert response.status_code == 500
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["unhandled_error", "retry_failed"]
    for line in lines:
        rendered = json.dumps(line)
        assert LEAK not in rendered
        assert "SELECT" not in rendered
        assert line["sqlstate"] == "22000"  # data exception (asyncpg refused to encode the value)
        assert "DBAPIError" in line["error_chain"][0]
        assert any("in failing_statement" in frame for frame in line["stack"])


LEAKY_TEST = """
import sys

def test_logs_a_statement():
    print('{"event": "unhandled_error", "exception": "[SQL: SELECT content FROM memories]"}', file=sys.stderr)

def test_logs_stored_content(request):
    request.config.pluginmanager.get_plugin("engram-logsink").contents.add("I keep my bike in the shed")
    print('{"event": "request", "note": "I keep my bike in the shed"}', file=sys.stderr)
"""

CLEAN_TEST = """
import sys

def test_logs_nothing_it_should_not(request):
    request.config.pluginmanager.get_plugin("engram-logsink").contents.add("I keep my bike in the shed")
    print('{"event": "request", "route": "/v1/memories", "status": 201}', file=sys.stderr)
"""

SERVED_TEST = """
import json
import os
import sys

from tests.support.served import logged_process

# A stand-in for `engram serve`, through served.py's own plumbing: log files read when it stops.
CONTENT = json.dumps({"event": "request", "note": "I keep my bike in the shed"})
SQL = json.dumps({"event": "unhandled_error", "exception": "[SQL: SELECT 1]"})
SERVER = f"import sys; print({CONTENT!r}, file=sys.stderr); print({SQL!r})"

def test_a_served_process_logs_stored_content(request, tmp_path):
    request.config.pluginmanager.get_plugin("engram-logsink").contents.add("I keep my bike in the shed")
    with logged_process([sys.executable, "-c", SERVER], dict(os.environ), tmp_path) as process:
        assert process.wait(timeout=60) == 0
"""


INNER = (
    "-p",
    "tests.support.logsink",
    "-p",
    "no:cacheprovider",
    "-o",
    "asyncio_default_fixture_loop_scope=function",
)


@pytest.mark.leaks_on_purpose
def test_the_log_checker_fails_a_run_that_logs_sql_or_content(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_leaky=LEAKY_TEST)
    result = pytester.runpytest_inprocess(*INNER)
    result.assert_outcomes(passed=2)  # every test passed ...
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ... and the run failed all the same
    output = result.stdout.str()
    assert "log lines that carry SQL or stored content" in output
    assert "test_logs_a_statement [Captured stderr call] SQL" in output
    assert "content 'I keep my bike in the shed'" in output


def test_the_log_checker_passes_a_clean_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_clean=CLEAN_TEST)
    result = pytester.runpytest_inprocess(*INNER)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.leaks_on_purpose
def test_the_log_checker_fails_a_run_whose_served_process_logs_sql_or_content(
    pytester: pytest.Pytester,
) -> None:
    """`engram serve` runs in a subprocess (tests/support/served.py): its log files are checked too."""
    pytester.makepyfile(test_served=SERVED_TEST)
    result = pytester.runpytest_inprocess(*INNER)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    assert "test_a_served_process_logs_stored_content [served stdout] SQL" in output
    assert (
        "test_a_served_process_logs_stored_content [served stderr] content 'I keep my bike in the shed'"
        in output
    )
