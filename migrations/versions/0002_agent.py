"""Agent tables: redacted messages and per-call usage events, both tenant-scoped with RLS.

Revision ID: 0002_agent
Revises: 0001_core
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0002_agent"
down_revision: str | None = "0001_core"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"


def upgrade() -> None:
    op.create_table(
        "messages",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("project_id", sa.String(200)),
        sa.Column("session_id", sa.String(200)),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("model", sa.String(200)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.CheckConstraint("role IN ('user', 'assistant', 'tool', 'system')", name="role"),
    )
    op.create_index(
        "ix_messages_session", "messages", ["tenant_id", "user_id", "session_id", sa.text("created_at DESC")]
    )
    op.create_table(
        "usage_events",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("id", sa.BigInteger, sa.Identity(always=False), nullable=False),
        sa.Column("user_id", sa.String(200)),
        sa.Column("session_id", sa.String(200)),
        sa.Column("request_id", sa.String(64)),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("completion_tokens", sa.Integer, nullable=False),
        sa.Column("total_tokens", sa.Integer, nullable=False),
        sa.Column("latency_ms", sa.Float, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("tenant_id", "id"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.CheckConstraint("kind IN ('chat', 'embed', 'extract', 'dream')", name="kind"),
    )
    op.create_index("ix_usage_events_time", "usage_events", ["tenant_id", sa.text("created_at DESC")])
    op.create_index("ix_usage_events_user_time", "usage_events", ["tenant_id", "user_id", "created_at"])
    for table in ("messages", "usage_events"):
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            "USING (tenant_id = engram_current_tenant()) WITH CHECK (tenant_id = engram_current_tenant())"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")
    op.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE}")


def downgrade() -> None:
    op.drop_table("usage_events")
    op.drop_table("messages")
