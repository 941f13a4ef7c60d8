"""A version of each memory's terms, and an index that lists a scope's rows with it and nothing else.

Recall's index of a scope's terms (app/store/terms.py) confirms the scope on every recall: one statement
counts its live rows and sums a fingerprint of each. The fingerprint was a hash of the row's `xmin`,
content hash and subject, which only the heap holds; a memory row carries its vector (1.5 kB at 384
dimensions), so a scope's rows sit about two to a page and the listing visited a page per two rows: 12.2
ms for the 100k bench's largest scope (6,159 rows on 3,152 pages), as much as that scope's exact cosine
scan, which is why the index stopped paying past a few thousand rows.

`terms_version` counts the changes to what a memory's terms derive from: a trigger adds one whenever an
update changes the content or the subject (those updates already rewrite the tsvector and its indexes,
so no update that was HOT stops being one), and a rebuild of its passages adds one
(app/store/passages.py). A fingerprint of the id and this version is read from ix_memories_scope_rows
alone, an index-only scan: the same listing took 3.4 ms there. It has ix_memories_scope's keys, so it
takes that index's place (every read that used it can use this one, and a write still updates one index
for the scope, not two).

Revision ID: 0014_terms_version
Revises: 0013_session_neighbours
Create Date: 2026-12-08
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014_terms_version"
down_revision: str | None = "0013_session_neighbours"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE memories ADD COLUMN terms_version bigint NOT NULL DEFAULT 0")
    op.execute(
        """CREATE FUNCTION memories_terms_version() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
               IF NEW.content IS DISTINCT FROM OLD.content OR NEW.subject IS DISTINCT FROM OLD.subject THEN
                   NEW.terms_version := OLD.terms_version + 1;
               END IF;
               RETURN NEW;
           END $$"""
    )
    op.execute(
        "CREATE TRIGGER memories_terms_version BEFORE UPDATE OF content, subject ON memories "
        "FOR EACH ROW EXECUTE FUNCTION memories_terms_version()"
    )
    op.execute(
        "CREATE INDEX ix_memories_scope_rows ON memories (tenant_id, user_id, status, project_id) "
        "INCLUDE (expires_at, id, terms_version)"
    )
    op.execute("DROP INDEX ix_memories_scope")


def downgrade() -> None:
    op.execute("CREATE INDEX ix_memories_scope ON memories (tenant_id, user_id, status, project_id)")
    op.execute("DROP INDEX ix_memories_scope_rows")
    op.execute("DROP TRIGGER memories_terms_version ON memories")
    op.execute("DROP FUNCTION memories_terms_version()")
    op.execute("ALTER TABLE memories DROP COLUMN terms_version")
