"""`engram remember` and `engram recall` against the running app: output, --json, keys and exit codes."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.bootstrap import DEV_KEY_FILE
from app.cli import main
from app.lib.console import ExitCode
from tests.conftest import NewTenant

REACT = "Use React and Vite for the frontend"
NEXT = "We are switching to Next.js for the frontend"


def error_line(err: str) -> dict[str, str]:
    """The CLI's JSON error (the live server in this process logs to the same stderr)."""
    for line in reversed(err.splitlines()):
        if line.startswith('{"error"'):
            parsed: dict[str, str] = json.loads(line)
            return parsed
    raise AssertionError(f"no JSON error in {err!r}")


@pytest.fixture
async def cli(
    live_url: str,
    new_tenant: NewTenant,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> Any:
    """Runs `engram` with a fresh tenant's key in ENGRAM_API_KEY and the live app in ENGRAM_URL."""
    _, key = await new_tenant()
    monkeypatch.setenv("ENGRAM_API_KEY", key)
    monkeypatch.setenv("ENGRAM_URL", live_url)
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))

    async def run(*argv: str) -> tuple[int, str, str]:
        code = await asyncio.to_thread(main, list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    run.key = key  # type: ignore[attr-defined]
    return run


async def test_remember_then_recall_prints_the_current_fact_as_prompt_context(cli: Any) -> None:
    slot = ("--user", "alice", "--type", "decision", "--subject", "frontend framework")
    code, out, _ = await cli("remember", REACT, *slot)
    assert code == ExitCode.OK
    assert out.startswith("created ")
    react_id = out.split()[1]
    code, out, _ = await cli("remember", NEXT, *slot)
    assert code == ExitCode.OK
    assert out.splitlines()[0].startswith("superseded ")
    assert f"superseded {react_id}" in out.splitlines()

    code, out, _ = await cli(
        "recall", "which frontend framework do we use?", "--user", "alice", "--budget", "256"
    )
    assert code == ExitCode.OK
    assert "Next.js" in out
    assert "React" not in out
    header, line = out.splitlines()[:2]  # the rendered context, nothing around it: its day, its line
    assert re.fullmatch(r"\d{1,2} [A-Z][a-z]{2} \d{4}", header)
    assert line == f"- [decision: frontend framework] {NEXT}"

    code, out, _ = await cli("recall", "frontend framework", "--user", "alice", "--json")
    result = json.loads(out)
    assert [m["memory"]["content"] for m in result["memories"]] == [NEXT]
    assert result["tokens_used"] <= result["token_budget"]


async def test_remember_reads_stdin_and_json_output_is_the_api_result(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("I am allergic to peanuts\n"))
    code, out, _ = await cli(
        "remember", "-", "--user", "bob", "--type", "constraint", "--tag", "health", "--json"
    )
    result = json.loads(out)
    assert code == ExitCode.OK
    assert (result["action"], result["memory"]["content"], result["memory"]["tags"]) == (
        "created",
        "I am allergic to peanuts",
        ["health"],
    )
    assert (await cli("recall", "peanuts", "--user", "somebody-else"))[1] == ""  # nothing: empty output


async def test_the_key_falls_back_to_the_dev_key_file(
    cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ENGRAM_API_KEY")
    code, _, err = await cli("recall", "anything", "--user", "alice")
    assert code == ExitCode.AUTH
    assert "ENGRAM_API_KEY" in err
    (tmp_path / DEV_KEY_FILE).write_text(cli.key + "\n")
    assert (await cli("remember", "Tea, no sugar", "--user", "alice"))[0] == ExitCode.OK


async def test_failures_have_distinct_exit_codes_and_json_errors(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_API_KEY", "egm_00000000_revoked-or-never-issued")
    code, _, err = await cli("remember", "x", "--user", "alice", "--json")
    assert (code, error_line(err)["error"]) == (ExitCode.AUTH, "unauthorized")
    monkeypatch.setenv("ENGRAM_API_KEY", cli.key)

    code, _, err = await cli("remember", "x", "--user", "alice", "--importance", "2")
    assert code == ExitCode.INVALID
    assert "importance" in err
    code, _, err = await cli("remember", "x", "--user", "alice", "--type", "beverage")
    assert code == ExitCode.INVALID
    assert "type" in err
    assert (await cli("remember", "   ", "--user", "alice"))[0] == ExitCode.USAGE
    assert (await cli("recall", "x"))[0] == ExitCode.USAGE  # --user is required

    code, _, err = await cli("recall", "x", "--user", "a", "--url", "http://127.0.0.1:9", "--retries", "0")
    assert code == ExitCode.UNAVAILABLE
    assert "cannot reach the service at http://127.0.0.1:9" in err


def test_the_installed_command_runs_as_a_process(live_url: str, cli: Any) -> None:
    env = {**os.environ, "ENGRAM_API_KEY": cli.key, "ENGRAM_URL": live_url}
    stored = subprocess.run(
        [sys.executable, "-m", "app", "remember", "-", "--user", "proc", "--subject", "editor", "--json"],
        input="My editor is Helix",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["memory"]["subject"] == "editor"
    recalled = subprocess.run(
        [sys.executable, "-m", "app", "recall", "which editor?", "--user", "proc"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (recalled.returncode, "Helix" in recalled.stdout) == (0, True)
