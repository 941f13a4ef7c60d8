"""Shared scopes: agent-private memories, shared spaces and the agents granted on them.

`memories.agent_id` (NULL: the user's own memory, seen by every agent of that user) makes a memory
private to one agent. A space is a tenant's shared scope (a team or a project); its memories have
`space` set and `user_id = ''`, which no API identifier can be (every one is at least one character), so
no user's scope ever matches them and the default path's statements stay as they were. The proposer's
user id lives in the promotion proposal and in the audit events. `space_grants` names the agents that
read a space (and may propose promotions into it); recall for an agent reads the spaces it is granted
through one sub-select in the scope filter.

Revision ID: 0011_spaces
Revises: 0010_webhooks
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0011_spaces"
down_revision: str | None = "0010_webhooks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"
TABLES = ("spaces", "space_grants")
# The value lists of two CHECK constraints of 0001_core grow by one each: a promotion proposal, and the
# source of a space's memory written when one is approved.
SOURCES = "'agent', 'api', 'extract', 'import', 'dream'"
KINDS = "'merge', 'forget', 'resalience', 'supersede'"


def _replace_check(table: str, name: str, column: str, values: str) -> None:
    op.drop_constraint(name, table, type_="check")  # the naming convention makes it ck_<table>_<name>
    op.create_check_constraint(name, table, f"{column} IN ({values})")


def upgrade() -> None:
    op.create_table(
        "spaces",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("description", sa.String(200)),
        sa.Column("auto_approve", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("tenant_id", "name"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
    )
    op.create_table(
        "space_grants",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("space", sa.String(100), nullable=False),
        sa.Column("agent_id", sa.String(200), nullable=False),
        sa.Column("can_propose", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("granted_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("tenant_id", "space", "agent_id"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "space"], ["spaces.tenant_id", "spaces.name"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
    )
    # Recall's sub-select: the spaces one agent is granted.
    op.create_index("ix_space_grants_tenant_id_agent_id", "space_grants", ["tenant_id", "agent_id"])
    op.add_column("memories", sa.Column("agent_id", sa.String(200)))
    op.add_column("memories", sa.Column("space", sa.String(100)))
    op.create_foreign_key(
        "fk_memories_tenant_id_space_spaces",
        "memories",
        "spaces",
        ["tenant_id", "space"],
        ["tenant_id", "name"],
    )
    op.create_index(
        "ix_memories_tenant_id_space",
        "memories",
        ["tenant_id", "space"],
        postgresql_where=sa.text("space IS NOT NULL"),
    )
    op.create_index(
        "ix_memories_tenant_id_user_id_agent_id",
        "memories",
        ["tenant_id", "user_id", "agent_id"],
        postgresql_where=sa.text("agent_id IS NOT NULL"),
    )
    _replace_check("memories", "source", "source", f"{SOURCES}, 'promotion'")
    _replace_check("dream_proposals", "kind", "kind", f"{KINDS}, 'promote'")
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            "USING (tenant_id = engram_current_tenant()) WITH CHECK (tenant_id = engram_current_tenant())"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")


def downgrade() -> None:
    _replace_check("dream_proposals", "kind", "kind", KINDS)
    _replace_check("memories", "source", "source", SOURCES)
    op.drop_index("ix_memories_tenant_id_user_id_agent_id", table_name="memories")
    op.drop_index("ix_memories_tenant_id_space", table_name="memories")
    op.drop_constraint("fk_memories_tenant_id_space_spaces", "memories", type_="foreignkey")
    op.drop_column("memories", "space")
    op.drop_column("memories", "agent_id")
    op.drop_table("space_grants")
    op.drop_table("spaces")
