"""ASGI entry point for servers that import an app factory (`uvicorn --factory app.asgi:app_factory`).

Reads settings from the environment; DATABASE_URL (or APP_DATABASE_URL) must point at a migrated
database. `engram serve` is the usual way to run the service; this is for other ASGI servers.
"""

from __future__ import annotations

from litestar import Litestar

from app.lib.settings import Settings
from app.main import create_app


def app_factory() -> Litestar:
    return create_app(Settings(), serving=True)
