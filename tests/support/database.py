"""Chooses the test database (DESIGN.md): TEST_DATABASE_URL, else Docker via testcontainers, else embedded.

`ENGRAM_TEST_DATABASE=testcontainers` (the GitHub workflow's test job sets it) demands testcontainers: no
Docker engine, or one that cannot supply the image, is then an error, never a silent fallback to the
embedded server. Unset (CI here, where no engine runs, and development machines) the fallback stays.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from app.db.urls import app_role_url

APP_ROLE = "engram_app"


@dataclass(frozen=True)
class TestDatabase:
    __test__ = False  # a fixture value, not a test class

    owner_url: str
    app_url: str
    kind: str


PG_IMAGE = "pgvector/pgvector:pg17"


def _docker_problem() -> str | None:
    """Why no reachable engine has, or can pull, the image (an engine with no registry cannot); None: one does."""
    try:
        import docker

        engine = docker.from_env(timeout=3)
        engine.ping()
    except Exception as exc:
        return f"no Docker engine answers ({type(exc).__name__}: {exc})"
    try:
        engine.images.get(PG_IMAGE)
    except Exception:
        try:
            engine.images.pull(PG_IMAGE)
        except Exception as exc:
            return f"Docker runs but {PG_IMAGE} cannot be had ({type(exc).__name__})"
    return None


REQUIRE = "ENGRAM_TEST_DATABASE"


class DatabaseUnavailable(RuntimeError):
    pass


def choose_database(env: Mapping[str, str], docker_problem: Callable[[], str | None]) -> str:
    """Which database the session uses: "external", "testcontainers" or "embedded" (`docker_problem` is
    asked only when Docker is a candidate). Raises when `ENGRAM_TEST_DATABASE=testcontainers` is set
    and testcontainers cannot be had, so a runner that should test on the image never tests on
    anything else."""
    required = env.get(REQUIRE, "")
    if required not in ("", "testcontainers"):
        raise DatabaseUnavailable(f"{REQUIRE}={required}: the only value is testcontainers (or unset)")
    where = " on GitHub Actions" if env.get("GITHUB_ACTIONS") == "true" else ""
    if env.get("TEST_DATABASE_URL"):
        if required:
            raise DatabaseUnavailable(f"{REQUIRE}=testcontainers{where}, yet TEST_DATABASE_URL is set")
        return "external"
    if env.get("ENGRAM_TEST_DOCKER", "1") == "1":
        problem = docker_problem()
        if problem is None:
            return "testcontainers"
    else:
        problem = "ENGRAM_TEST_DOCKER is not 1"
    if required:
        raise DatabaseUnavailable(
            f"{REQUIRE}=testcontainers{where}, but {problem}: refusing the embedded fallback"
        )
    print(f"{problem}; using embedded PostgreSQL")
    return "embedded"


@contextmanager
def test_database() -> Iterator[TestDatabase]:
    """A fresh, migrated database for the test session."""
    from app.db.migrate import upgrade

    kind = choose_database(os.environ, _docker_problem)
    if kind == "external":
        url = os.environ["TEST_DATABASE_URL"]
        upgrade(url)
        yield TestDatabase(
            url, app_role_url(url, APP_ROLE, os.environ.get("TEST_APP_DB_PASSWORD")), "external"
        )
        return
    if kind == "testcontainers":
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer(PG_IMAGE, driver="asyncpg") as pg:
            owner = pg.get_connection_url()
            upgrade(owner)
            # The service role authenticates with a password over TCP in a container.
            _set_app_password(owner, "engram-test")
            yield TestDatabase(owner, app_role_url(owner, APP_ROLE, "engram-test"), "testcontainers")
        return
    from app.db.embedded import start_embedded

    data_dir = Path(tempfile.mkdtemp(prefix="engram-test-"))
    embedded = start_embedded(data_dir, cleanup_mode="delete")
    try:
        upgrade(embedded.owner_url)
        yield TestDatabase(embedded.owner_url, app_role_url(embedded.owner_url, APP_ROLE, None), "embedded")
    finally:
        with suppress(Exception):
            embedded.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def _set_app_password(owner_url: str, password: str) -> None:
    import asyncio

    import asyncpg

    from app.db.urls import to_asyncpg_dsn

    async def run() -> None:
        conn = await asyncpg.connect(to_asyncpg_dsn(owner_url))
        try:
            await conn.execute(f"ALTER ROLE {APP_ROLE} PASSWORD '{password}'")
        finally:
            await conn.close()

    asyncio.run(run())
