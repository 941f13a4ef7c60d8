"""Chooses the test database (DESIGN.md): TEST_DATABASE_URL, else Docker via testcontainers, else embedded."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
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


def _docker_available() -> bool:
    """A reachable engine that has, or can pull, the image (an engine with no registry cannot)."""
    try:
        import docker

        engine = docker.from_env(timeout=3)
        engine.ping()
    except Exception:
        return False
    try:
        engine.images.get(PG_IMAGE)
    except Exception:
        try:
            engine.images.pull(PG_IMAGE)
        except Exception as exc:
            print(
                f"Docker runs but {PG_IMAGE} cannot be had ({type(exc).__name__}); using embedded PostgreSQL"
            )
            return False
    return True


@contextmanager
def test_database() -> Iterator[TestDatabase]:
    """A fresh, migrated database for the test session."""
    from app.db.migrate import upgrade

    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        upgrade(url)
        yield TestDatabase(
            url, app_role_url(url, APP_ROLE, os.environ.get("TEST_APP_DB_PASSWORD")), "external"
        )
        return
    if os.environ.get("ENGRAM_TEST_DOCKER", "1") == "1" and _docker_available():
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
