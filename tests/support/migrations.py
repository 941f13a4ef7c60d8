"""Migrations run for real in tests: a scratch database on the test server (`scratch`, registered as a
plugin by tests/conftest.py) and Alembic's commands against it (`migrate`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from alembic import command
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.migrate import alembic_config
from tests.support.database import TestDatabase


@pytest.fixture
async def scratch(database: TestDatabase, owner_engine: AsyncEngine) -> AsyncIterator[str]:
    """The owner URL of a new, empty database on the test server."""
    name = f"engram_migration_{uuid.uuid4().hex[:8]}"
    async with owner_engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield make_url(database.owner_url).set(database=name).render_as_string(hide_password=False)
    finally:
        async with owner_engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))


async def migrate(url: str, verb: str, revision: str) -> None:
    """Alembic runs its own event loop: in a thread of its own."""
    await asyncio.to_thread(getattr(command, verb), alembic_config(url), revision)
