"""Each memory's content token count, so recall does not encode every candidate's content.

Recall packs lines into a token budget and encoded each candidate line it could not rule out: on the
100k bench's largest scope ~20 lines per recall that the process had not counted before, ~1 ms. The count
of a line's body (a space and the content on one line) depends on the content alone, so it is stored
when the content is written (app/memory/lines.py); recall adds the count of the line's short prefix.
Rows written before this migration keep NULL and are counted as before.

Revision ID: 0007_content_tokens
Revises: 0006_text_cover
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_content_tokens"
down_revision: str | None = "0006_text_cover"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("content_tokens", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("memories", "content_tokens")
