"""Startup chores shared by the CLI and tests: pick the database, migrate it, create the dev tenant."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.embedded import EmbeddedDatabase, start_embedded
from app.db.migrate import upgrade
from app.db.session import create_engine
from app.lib.settings import Settings
from app.tenancy import admin

T = TypeVar("T")
DEV_TENANT = "dev"
DEV_KEY_FILE = "dev-api-key"


@dataclass(frozen=True, slots=True)
class Prepared:
    settings: Settings  # with database_url resolved
    embedded: EmbeddedDatabase | None


def prepare_database(settings: Settings, *, migrate: bool = True) -> Prepared:
    """Start the embedded server when DATABASE_URL is unset, then apply migrations."""
    embedded = None
    if not settings.database_url:
        embedded = start_embedded(settings.data_dir)
        settings = settings.model_copy(update={"database_url": embedded.owner_url})
    assert settings.database_url is not None
    if migrate:
        upgrade(settings.database_url)
    return Prepared(settings=settings, embedded=embedded)


def run_as_owner(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `work` in one owner transaction (administration only; never on a request path)."""
    assert settings.database_url is not None
    url = settings.database_url

    async def main() -> T:
        engine = create_engine(url, pool_size=1, max_overflow=0)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                return await work(session)
        finally:
            await engine.dispose()

    return asyncio.run(main())


def ensure_dev_tenant(settings: Settings) -> tuple[str | None, Path]:
    """On a fresh embedded database, create the `dev` tenant; returns its key once (else None)."""
    key_file = settings.data_dir / DEV_KEY_FILE

    async def work(session: AsyncSession) -> str | None:
        if await admin.any_tenant(session):
            return None
        created = await admin.create_tenant(session, DEV_TENANT)
        return created.plaintext

    key = run_as_owner(settings, work)
    if key is not None:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key + "\n")
        key_file.chmod(0o600)
    return key, key_file
