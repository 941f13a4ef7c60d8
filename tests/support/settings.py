"""The service's settings in tests, shared by the suite's fixtures and the screenshot script."""

from __future__ import annotations

from pathlib import Path

from app.lib.settings import Settings
from tests.support.database import TestDatabase


def test_settings(db: TestDatabase, data_dir: Path) -> Settings:
    """The service's settings in tests: the hash embedder, no background timers, a roomy pool."""
    return Settings(
        database_url=db.owner_url,
        app_database_url=db.app_url,
        embedder="hash",
        data_dir=data_dir,
        log_json=True,
        db_pool_size=20,
        db_max_overflow=40,
        reinforce_interval_s=0,  # deterministic store snapshots; batched mode: test_reinforcement.py
        spare_keyword_min_rows=0,
        webhook_interval_s=0,  # deliveries run where a test starts a deliverer (test_webhooks.py)  # every recall's text half on a spare connection when one is free
    )
