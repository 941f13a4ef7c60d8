"""Lifecycle: an index for the expiry sweep (live memories with an expiry, per tenant, by time).

Revision ID: 0003_lifecycle
Revises: 0002_agent
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_lifecycle"
down_revision: str | None = "0002_agent"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The sweep asks "which live memories of this tenant expired by now?" every interval; without this
    # it scans every live row. Few memories carry an expiry, so the partial index stays small.
    op.create_index(
        "ix_memories_expiry",
        "memories",
        ["tenant_id", "expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL AND status IN ('active', 'pinned')"),
    )


def downgrade() -> None:
    op.drop_index("ix_memories_expiry", table_name="memories")
