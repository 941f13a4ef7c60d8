"""The passages of long memories (`memory_passages`, migration 0012): written, rebuilt and deleted with
their memory's content, in the transaction that writes it. Recall's reads of them live with its other
statements (app/store/candidates.py, app/store/bm25.py).

A passage's tsvector is made here, in SQL, from its memory's row (`coalesce(subject, '') || ' ' ||` the
passage's slice of `content`), the expression of `memories.content_tsv` over the slice, so a passage
matches the words its memory shows and nothing else.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.store.sql import vector_literal
from app.tenancy.types import TenantId

# The slice of `m.content` a passage `p` (or the unnested row `v`) covers, and its tsvector.
_SLICE = "substr(m.content, {t}.char_start + 1, {t}.char_end - {t}.char_start)"
PASSAGE_TEXT = _SLICE.format(t="p")
_TSV = "to_tsvector('english', coalesce(m.subject, '') || ' ' || {slice})"


# A memory row's new version, nothing in it changed.
_NEW_VERSION = text(
    "UPDATE memories SET terms_version = nextval('memories_terms_version_seq') "
    "WHERE tenant_id = :tenant AND id = ANY (:ids)"
)


@dataclass(frozen=True, slots=True)
class NewPassage:
    """One passage of a memory the transaction has written (flushed): its span, tokens and vector."""

    memory_id: uuid.UUID
    ordinal: int
    char_start: int
    char_end: int
    tokens: int
    embedding: Sequence[float] | None


class PassageStore:
    """The passages of one tenant's memories."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def replace(
        self, memory_ids: Sequence[uuid.UUID], passages: Sequence[NewPassage], embed_model: str
    ) -> None:
        """The passages of `memory_ids` become `passages` (none for a memory that has none now). Their
        memories get a new `terms_version`, whether or not anything else of them changed: recall's index
        of a scope's terms (app/store/terms.py) reads a memory's units again when that changes."""
        if memory_ids:
            await self.delete(memory_ids)
            await self.session.execute(_NEW_VERSION, {"tenant": self.tenant, "ids": list(memory_ids)})
        if passages:
            await self.add(passages, embed_model)

    async def delete(self, memory_ids: Sequence[uuid.UUID]) -> None:
        await self.session.execute(
            text("DELETE FROM memory_passages WHERE tenant_id = :tenant AND memory_id = ANY (:ids)"),
            {"tenant": self.tenant, "ids": list(memory_ids)},
        )

    async def add(self, passages: Sequence[NewPassage], embed_model: str) -> None:
        """Insert passages of memories already flushed, in one statement; each takes its memory's user."""
        sql = text(
            f"""INSERT INTO memory_passages (tenant_id, memory_id, ordinal, user_id, char_start, char_end,
                                             tokens, embed_model, embedding, content_tsv)
                SELECT m.tenant_id, m.id, v.ordinal, m.user_id, v.char_start, v.char_end, v.tokens,
                       CASE WHEN v.embedding IS NOT NULL THEN CAST(:embed_model AS varchar) END,
                       CAST(v.embedding AS vector), {_TSV.format(slice=_SLICE.format(t="v"))}
                FROM unnest(CAST(:ids AS uuid[]), CAST(:ordinals AS smallint[]), CAST(:starts AS int[]),
                            CAST(:ends AS int[]), CAST(:tokens AS int[]), CAST(:vectors AS text[]))
                       AS v(memory_id, ordinal, char_start, char_end, tokens, embedding)
                JOIN memories m ON m.tenant_id = :tenant AND m.id = v.memory_id"""
        )
        await self.session.execute(
            sql,
            {
                "tenant": self.tenant,
                "embed_model": embed_model,
                "ids": [p.memory_id for p in passages],
                "ordinals": [p.ordinal for p in passages],
                "starts": [p.char_start for p in passages],
                "ends": [p.char_end for p in passages],
                "tokens": [p.tokens for p in passages],
                "vectors": [None if p.embedding is None else vector_literal(p.embedding) for p in passages],
            },
        )

    async def refresh_text(self, memory_ids: Sequence[uuid.UUID]) -> None:
        """Remake the passages' tsvectors from their memories (after a change of subject)."""
        await self.session.execute(
            text(
                f"""UPDATE memory_passages p SET content_tsv = {_TSV.format(slice=PASSAGE_TEXT)}
                    FROM memories m
                    WHERE p.tenant_id = :tenant AND p.memory_id = ANY (:ids)
                      AND m.tenant_id = p.tenant_id AND m.id = p.memory_id"""
            ),
            {"tenant": self.tenant, "ids": list(memory_ids)},
        )

    async def counts(self, memory_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, int]:
        """How many passages each of these memories has (absent: none)."""
        rows = await self.session.execute(
            text(
                """SELECT memory_id, count(*) AS n FROM memory_passages
                   WHERE tenant_id = :tenant AND memory_id = ANY (:ids) GROUP BY memory_id"""
            ),
            {"tenant": self.tenant, "ids": list(memory_ids)},
        )
        return {row.memory_id: int(row.n) for row in rows}
