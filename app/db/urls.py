"""Database URL helpers: driver prefixes and the service role's URL derived from the owner's."""

from __future__ import annotations

from sqlalchemy.engine import make_url


def to_async_url(url: str) -> str:
    """The same URL with the asyncpg driver, as SQLAlchemy's async engine needs."""
    parsed = make_url(url)
    if parsed.drivername in ("postgres", "postgresql", "postgresql+psycopg", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    return parsed.render_as_string(hide_password=False)


def to_asyncpg_dsn(url: str) -> str:
    """A plain libpq-style DSN for asyncpg itself (benchmarks talk to it directly)."""
    parsed = make_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def app_role_url(owner_url: str, role: str, password: str | None) -> str:
    """The owner's URL with the service role's credentials (same host, port and database)."""
    parsed = make_url(to_async_url(owner_url)).set(username=role, password=password)
    return parsed.render_as_string(hide_password=False)
