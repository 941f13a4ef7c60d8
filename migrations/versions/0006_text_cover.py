"""Covering indexes for the text half of recall, so it reads an index instead of every heap row.

Recall's text half tests `content_tsv @@ query` on every live row of the user's scope. Read through
ix_memories_scope, that visits one heap page per row (a scope's rows are spread over the table: 6,279
rows sat on 5,676 pages in the 100k-row bench), and on a large scope it cost as much as the cosine
half. ix_memories_scope_text carries the tsvector and what the statement returns, so the scan is
index-only: on that scope the text half went from 8.2 to 3.3 ms (EXPLAIN ANALYZE).

A btree entry cannot exceed 2,704 bytes, and a tsvector can be several times its text (`a1-b1`
yields three lexemes), so the covering index holds only rows whose entry is sure to fit: the predicate
bounds the tsvector's stored size (its text form plus 4 bytes a lexeme) plus the two free-text keys at
2,400 bytes, which leaves ~150 bytes for the fixed-size columns and headers. ix_memories_scope_long
finds the other rows, which recall reads from the heap as before. Both predicates are repeated word
for word in the statement (`_SHORT_TSV` in app/memory/repository.py): that is how the planner matches
a partial index.

An index-only scan still reads the heap for rows on pages changed since the last vacuum, and every
recall changes pages (reinforcement updates the rows it returns). On that scope 1,432 heap fetches cost
the text half 0.45 ms (3.30 -> 2.85 ms after a VACUUM), so autovacuum visits `memories` after 2% of
its rows changed or were inserted, not PostgreSQL's default 20%.

Revision ID: 0006_text_cover
Revises: 0005_vector_storage
Create Date: 2026-11-30
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006_text_cover"
down_revision: str | None = "0005_vector_storage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHORT = (
    "(octet_length(content_tsv::text) + 4 * length(content_tsv)"
    " + octet_length(user_id) + octet_length(coalesce(project_id, '')) <= 2400)"
)


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_memories_scope_text ON memories (tenant_id, user_id, status, project_id) "
        f"INCLUDE (expires_at, id, content_hash, content_tsv) WHERE {SHORT}"
    )
    op.execute(
        f"CREATE INDEX ix_memories_scope_long ON memories (tenant_id, user_id, status, project_id) WHERE NOT {SHORT}"
    )
    op.execute(
        "ALTER TABLE memories SET "
        "(autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02)"
    )


def downgrade() -> None:
    op.execute(
        "ALTER TABLE memories RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor)"
    )
    op.execute("DROP INDEX ix_memories_scope_long")
    op.execute("DROP INDEX ix_memories_scope_text")
