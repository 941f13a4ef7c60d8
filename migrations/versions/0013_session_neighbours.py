"""Index of each user's memories by session and time: recall finds a candidate's neighbours in its
conversation (the memory just before and just after it in the same session).

A conversation's turns answer each other: "When did you go to the support group?" is answered by the
next turn, "Last Tuesday, it was great", which shares no word with the question and little meaning. A
candidate's score takes a share of its neighbours' relevance (docs/RANKING.md, "Session neighbours"),
and each candidate looks up when its two neighbours were observed by this index: two probes of the
index alone, only for memories written with a `session_id`. Only live memories are in it: a forgotten or
superseded message no longer stands between two turns.

Revision ID: 0013_session_neighbours
Revises: 0012_passages
Create Date: 2026-12-06
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013_session_neighbours"
down_revision: str | None = "0012_passages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_memories_session ON memories (tenant_id, user_id, session_id, valid_from, id) "
        "WHERE session_id IS NOT NULL AND status IN ('active', 'pinned')"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_session")
