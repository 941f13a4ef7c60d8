"""ASGI entry point for servers that import an app factory (`uvicorn --factory app.asgi:app_factory`).

Reads settings from the environment; DATABASE_URL (or APP_DATABASE_URL) must point at a migrated
database. `engram serve` is the usual way to run the service; this is for other ASGI servers.
"""

from __future__ import annotations

import os

from litestar import Litestar

from app.lib.settings import Settings
from app.main import create_app
from app.serve import SUPERVISED_ENV, configure_header_timeout, exit_with_parent


def app_factory() -> Litestar:
    supervisor = os.environ.get(SUPERVISED_ENV)  # a worker of `engram serve --workers N`
    if supervisor and supervisor.isdigit():
        exit_with_parent(int(supervisor))  # it ends with its supervisor
    settings = Settings()
    configure_header_timeout(settings.header_timeout_s)  # `engram serve --workers N` serves with its protocol
    return create_app(settings, serving=True)
