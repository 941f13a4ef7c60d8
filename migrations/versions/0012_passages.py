"""Passages of long memories: recall scores a long memory's words by its best passage and may show that
passage instead of the whole memory.

A conversation turn or a document of a few hundred tokens was ranked and packed whole: its BM25 was that
of the whole text, and one such memory filled a 256-token budget. A memory whose content is longer than
the policy's passage size (`ENGRAM_PASSAGE_TOKENS`) now also has passages: sentence-aligned windows of
its content (app/memory/passages.py), each with its own vector and tsvector, written in the memory's own
transaction and rebuilt whenever its content changes (docs/RANKING.md, "Passages"). The vectors choose
which passage recall shows; no query searches them by distance, so they have no HNSW index.

A passage row holds character offsets into `memories.content`, not a copy of the text: the content is
already redacted, and the passage is sliced from it when recall shows it. `user_id` is the memory's
(it never changes), so recall reads one user's passages without scanning the scope's memories. Rows go
with their memory (foreign key, on delete cascade: an erase leaves nothing behind); a soft-forgotten or
superseded memory keeps its passages, and the memory's scope filter decides whether recall reads them.
Long memories written before this migration have no passages until `engram reembed` builds them; until
then they rank and pack whole as before.

Revision ID: 0012_passages
Revises: 0011_spaces
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql as pg

revision: str = "0012_passages"
down_revision: str | None = "0011_spaces"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"


def upgrade() -> None:
    op.create_table(
        "memory_passages",
        sa.Column("tenant_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("memory_id", pg.UUID(as_uuid=True), nullable=False),
        sa.Column("ordinal", sa.SmallInteger, nullable=False),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("char_start", sa.Integer, nullable=False),
        sa.Column("char_end", sa.Integer, nullable=False),
        sa.Column("tokens", sa.Integer, nullable=False),
        sa.Column("embed_model", sa.String(200)),
        sa.Column("embedding", Vector()),
        sa.Column("content_tsv", pg.TSVECTOR, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "memory_id", "ordinal"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"], ["memories.tenant_id", "memories.id"], ondelete="CASCADE"
        ),
        sa.CheckConstraint("ordinal >= 0", name="ordinal"),
        sa.CheckConstraint("char_start >= 0 AND char_end > char_start", name="span"),
    )
    # Recall's passage reads start from the user (its statistics and the exact cosine scan).
    op.create_index("ix_memory_passages_user", "memory_passages", ["tenant_id", "user_id", "memory_id"])
    # As for memories (0005): the vector and the tsvector stay in the heap row, uncompressed.
    op.execute("ALTER TABLE memory_passages ALTER COLUMN embedding SET STORAGE MAIN")
    op.execute("ALTER TABLE memory_passages SET (toast_tuple_target = 8160)")
    op.execute("ALTER TABLE memory_passages ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE memory_passages FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON memory_passages "
        "USING (tenant_id = engram_current_tenant()) WITH CHECK (tenant_id = engram_current_tenant())"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON memory_passages TO {APP_ROLE}")


def downgrade() -> None:
    op.drop_table("memory_passages")
