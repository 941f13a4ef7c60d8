"""Every memory row's `terms_version` is one no earlier row of that id had: drawn from a sequence.

Migration 0014 counted a memory's term changes from 0, so a row deleted and written again under the
same id (an erase, then an import of a document that still names it) started at 0 once more, and recall's
index of the scope's terms (app/store/terms.py), which fingerprints a row by its id and version, took the
new row for the one it had read (the `xmin` it fingerprinted before differed for every row written). Now
an insert takes the sequence's next value, and so does every change of the content or subject (the
trigger) and every rebuild of the passages (app/store/passages.py). The sequence starts above any
count 0014 kept, so no row's new version equals an earlier row's old one.

Revision ID: 0015_terms_version_unique
Revises: 0014_terms_version
Create Date: 2026-12-08
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015_terms_version_unique"
down_revision: str | None = "0014_terms_version"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "engram_app"
SEQUENCE = "memories_terms_version_seq"


def _trigger(next_version: str) -> str:
    return f"""CREATE OR REPLACE FUNCTION memories_terms_version() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN
                   IF NEW.content IS DISTINCT FROM OLD.content OR NEW.subject IS DISTINCT FROM OLD.subject THEN
                       NEW.terms_version := {next_version};
                   END IF;
                   RETURN NEW;
               END $$"""


def upgrade() -> None:
    op.execute(f"CREATE SEQUENCE {SEQUENCE} START WITH 4294967296 OWNED BY memories.terms_version")
    op.execute(f"GRANT USAGE ON SEQUENCE {SEQUENCE} TO {APP_ROLE}")
    op.execute(f"ALTER TABLE memories ALTER COLUMN terms_version SET DEFAULT nextval('{SEQUENCE}')")
    op.execute(_trigger(f"nextval('{SEQUENCE}')"))


def downgrade() -> None:
    op.execute(_trigger("OLD.terms_version + 1"))
    op.execute("ALTER TABLE memories ALTER COLUMN terms_version SET DEFAULT 0")
    op.execute(f"DROP SEQUENCE {SEQUENCE}")
