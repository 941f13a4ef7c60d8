"""Programmatic Alembic: upgrade to head and report whether a database is current."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

ROOT = Path(__file__).resolve().parents[2]


def alembic_config(owner_url: str) -> Config:
    """Alembic's config for this project, bound to the owner's URL."""
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.attributes["url"] = owner_url
    return cfg


def upgrade(owner_url: str) -> None:
    """Apply every pending migration. Must be called outside a running event loop."""
    command.upgrade(alembic_config(owner_url), "head")


def head_revision() -> str | None:
    """The newest revision in `migrations/`."""
    script = ScriptDirectory.from_config(alembic_config("postgresql://unused"))
    return script.get_current_head()
