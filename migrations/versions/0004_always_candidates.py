"""Partial index for the memories every recall considers (pinned and critical rules).

Without it, recall's "always" candidates scan the user's whole scope to find the few pinned memories
and critical rules; with 100k memories in one user that scan dominated recall latency.

Revision ID: 0004_always_candidates
Revises: 0003_lifecycle
Create Date: 2026-11-30
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0004_always_candidates"
down_revision: str | None = "0003_lifecycle"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_memories_always ON memories (tenant_id, user_id) "
        "WHERE status = 'pinned' OR (type = 'critical_rule' AND status = 'active')"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_always")
