"""Access counts in a narrow table of their own, so a recall no longer rewrites the memory it returned.

Recall reinforces what it hands back (a count and the time of the last access; salience decays from
it). Stored in `memories`, every reinforcement was an UPDATE of a ~2.4 kB row that carries a vector
and a tsvector: a new row version, and when the page had no room (about half the time, even at
fillfactor 70) a new entry in every index of the table, the HNSW graphs included. On the 100k bench
data, 800 accesses written into `memories` took 130-200 ms and 2-4 MB of WAL; into this table, 3.5 ms
and ~170 kB. Reads no longer dirty the scanned table either, so its pages stay all-visible and
recall's index-only text scan stays index-only.

A memory without a row here has never been accessed. Rows go with their memory (foreign key, on
delete cascade: a hard erase leaves nothing behind).

Revision ID: 0008_memory_access
Revises: 0007_content_tokens
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0008_memory_access"
down_revision: str | None = "0007_content_tokens"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"


def _owner_sees_every_tenant(force: bool) -> None:
    """Row-level security is forced on the owner too: lift it while rows move between tables."""
    verb = "FORCE" if force else "NO FORCE"
    for table in ("memories", "memory_access"):
        op.execute(f"ALTER TABLE {table} {verb} ROW LEVEL SECURITY")


def upgrade() -> None:
    op.create_table(
        "memory_access",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("memory_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("access_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_accessed_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("tenant_id", "memory_id"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"], ["memories.tenant_id", "memories.id"], ondelete="CASCADE"
        ),
        # Room on each page for the next version of its rows: counter updates stay HOT.
        postgresql_with={"fillfactor": 80},
    )
    op.execute("ALTER TABLE memory_access ENABLE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON memory_access "
        "USING (tenant_id = engram_current_tenant()) WITH CHECK (tenant_id = engram_current_tenant())"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON memory_access TO {APP_ROLE}")
    _owner_sees_every_tenant(False)
    op.execute(
        "INSERT INTO memory_access (tenant_id, memory_id, access_count, last_accessed_at) "
        "SELECT tenant_id, id, access_count, last_accessed_at FROM memories "
        "WHERE access_count > 0 OR last_accessed_at IS NOT NULL"
    )
    _owner_sees_every_tenant(True)
    op.drop_column("memories", "last_accessed_at")
    op.drop_column("memories", "access_count")


def downgrade() -> None:
    op.add_column("memories", sa.Column("access_count", sa.Integer, nullable=False, server_default="0"))
    op.add_column("memories", sa.Column("last_accessed_at", sa.DateTime(timezone=True)))
    _owner_sees_every_tenant(False)
    op.execute(
        "UPDATE memories m SET access_count = a.access_count, last_accessed_at = a.last_accessed_at "
        "FROM memory_access a WHERE a.tenant_id = m.tenant_id AND a.memory_id = m.id"
    )
    _owner_sees_every_tenant(True)
    op.drop_table("memory_access")
