"""A pytest plugin: the run fails if any line the code under test logged carries SQL, SQL parameters or
memory content that the tests stored.

What is read: every captured section of every phase of every test (stdout, stderr, where structlog
writes its JSON lines, and the stdlib log records pytest collects: litestar, sqlalchemy, asyncpg, ...),
and the log files of the `engram serve` subprocesses the tests start (`tests/support/served.py` hands
each one to `read_log_files` when its process has stopped), under the test that started it.
What is looked for: SQLAlchemy's `[SQL: ...]` and `[parameters: ...]` blocks, asyncpg's "query argument
$n" messages, SQL statements, and every memory and message content the session's database saw written
(`LogSink.contents`, fed by a trigger that `tests/conftest.py` puts on the test database).

Matching thousands of contents against megabytes of logs: a content can only be in the logs if each of
its words (4+ word characters) is a word of the logs, so that test, on a set, picks the few contents
worth a substring search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SQL_IN_LOGS = re.compile(
    r"\[SQL: |\[parameters: |\[generated in |query argument \$\d+"
    r"|\bSELECT\s+(?:DISTINCT\s+)?[\w*.\"(]+[^\n]{0,300}?\bFROM\s+[\w\"]"
    r"|\bINSERT INTO\s+[\w\"]|\bDELETE FROM\s+[\w\"]|\bUPDATE\s+[\w\"]+\s+SET\s"
)
WORD = re.compile(r"\w{4,}")
DEMO_MARKER = "leaks_on_purpose"
MIN_CONTENT_CHARS = 12  # shorter contents ("tea", "x") are everywhere in any text


@dataclass(eq=False)  # a pytest plugin: pluggy keeps plugins in sets, so it must stay hashable
class LogSink:
    """Registered as a plugin object by `pytest_configure` below; its methods are pytest hooks."""

    sections: list[tuple[str, str, str]] = field(default_factory=list)  # (test id, section, text)
    contents: set[str] = field(default_factory=set)
    current: pytest.Item | None = None  # the test running now (a subprocess's logs are read under it)

    def read_files(self, paths: list[Path]) -> None:
        """Check these files like a test's captured output, under the running test's id."""
        item = self.current
        if item is not None and DEMO_MARKER in item.keywords:
            return
        nodeid = item.nodeid if item is not None else "(session)"
        for path in paths:
            if path.is_file() and (text := path.read_text(errors="replace")):
                self.sections.append((nodeid, f"served {path.name}", text))

    def violations(self, limit: int = 20) -> list[str]:
        found = [
            f"{nodeid} [{name}] SQL: {_around(text, match.start())}"
            for nodeid, name, text in self.sections
            for match in SQL_IN_LOGS.finditer(text)
        ]
        words = {w for _, _, text in self.sections for w in WORD.findall(text)}
        for content in sorted(self.contents):
            if len(content.strip()) < MIN_CONTENT_CHARS or not set(WORD.findall(content)) <= words:
                continue
            for nodeid, name, text in self.sections:
                if (at := text.find(content)) >= 0:
                    found.append(f"{nodeid} [{name}] content {content[:60]!r}: {_around(text, at)}")
        return found[:limit]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> None:
        self.current = item  # returns None: the test runs as usual

    def pytest_runtest_logfinish(self) -> None:
        self.current = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if DEMO_MARKER in report.keywords:
            return  # a test that shows this checker failing an inner run: its output leaks on purpose
        for name, text in report.sections:
            if name.startswith("Captured ") and text:
                self.sections.append((report.nodeid, name, text))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        found = self.violations()
        if not found:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.section("log lines that carry SQL or stored content", sep="=", red=True)
            for line in found:
                reporter.line(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _around(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)][:300]


LOG_SINK = "engram-logsink"  # the plugin's name: `config.pluginmanager.get_plugin(LOG_SINK)`
# The sinks of the runs in progress, innermost last (a test may run pytest in-process: pytester).
_ACTIVE: list[LogSink] = []


def read_log_files(*paths: Path) -> None:
    """Have the running session's checker read these log files (a subprocess's, once it has stopped)."""
    if _ACTIVE:
        _ACTIVE[-1].read_files(list(paths))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{DEMO_MARKER}: output that the log checker does not read")
    sink = LogSink()
    config.pluginmanager.register(sink, LOG_SINK)
    _ACTIVE.append(sink)


def pytest_unconfigure(config: pytest.Config) -> None:
    sink = config.pluginmanager.get_plugin(LOG_SINK)
    if sink in _ACTIVE:
        _ACTIVE.remove(sink)
