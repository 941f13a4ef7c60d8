"""ASGI entry point for servers that import an app factory (`uvicorn --factory app.asgi:app_factory`).

Reads settings from the environment; DATABASE_URL (or APP_DATABASE_URL) must point at a migrated
database. `engram serve` is the usual way to run the service; this is for other ASGI servers.
"""

from __future__ import annotations

from litestar import Litestar

from app.lib.settings import Settings
from app.main import create_app
from app.serve import configure_header_timeout


def app_factory() -> Litestar:
    settings = Settings()
    configure_header_timeout(settings.header_timeout_s)  # `engram serve --workers N` serves with its protocol
    return create_app(settings, serving=True)
