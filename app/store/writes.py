"""The write path's questions, each asked for a whole write (one item or a batch) in one statement: the
advisory locks of its slots, each slot's current memory, the live memories with its content hashes, and
each item's nearest live memory of the same type. Scopes here are one project exactly (`Reach.ONLY`):
a slot lives in one project."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Float, Integer, Text, column, select, text, tuple_
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory
from app.store.bm25 import lexemes_of
from app.store.scope import scope_clause, scope_params, scope_sql
from app.store.sql import (
    ACCESS_JOIN,
    MEMORY_ATTRIBUTES,
    MEMORY_SQL,
    model_literal,
    use_hnsw_scan,
    vector_literal,
)
from app.tenancy.types import TenantId
from app.vocabulary import MemoryType, Scope


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A live memory near a new one: its cosine with it and its lexemes (app.memory.similarity)."""

    memory: Memory
    cosine: float
    lexemes: dict[str, int]


@dataclass(frozen=True, slots=True)
class Nearby:
    """A query's nearest memories, nearest first, and the query's own lexemes (`words` as stored)."""

    neighbours: list[Neighbour]
    lexemes: dict[str, int]


@dataclass(frozen=True, slots=True)
class NearestQuery:
    """Which live memory of `type` is closest to `vector`; a memory in another named slot than `subject`
    is a different attribute, never a match. `words`: the new memory's text as its `content_tsv` is made
    of (subject and content)."""

    type: MemoryType
    subject: str | None
    vector: Sequence[float]
    words: str = ""


def _ilike_contains(value: str) -> str:
    return "%" + value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class WriteStore:
    """Locks and lookups of the write path for one tenant."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    def add(self, memory: Memory) -> None:
        self.session.add(memory)

    async def lock(self, keys: Sequence[str]) -> None:
        """Serialise writers on each key until this transaction ends, taken in the given order in one
        statement (callers sort the keys, so two writes can never deadlock)."""
        await self.session.execute(
            text(
                "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) "
                "FROM unnest(CAST(:keys AS text[])) WITH ORDINALITY AS t(k, n)"
            ),
            {"keys": list(keys)},
        )

    async def slot_currents(self, scope: Scope, slots: Sequence[tuple[str, str]]) -> list[Memory]:
        """The newest live memory of every (subject, type) of `slots`."""
        query = (
            select(Memory)
            .where(scope_clause(scope, live=True), tuple_(Memory.subject, Memory.type).in_(list(slots)))
            .order_by(Memory.subject, Memory.type, Memory.valid_from.desc())
            .ext(distinct_on(Memory.subject, Memory.type))
        )
        return list((await self.session.scalars(query)).all())

    async def live_with_hashes(self, scope: Scope, digests: Sequence[str]) -> list[Memory]:
        query = select(Memory).where(scope_clause(scope, live=True), Memory.content_hash.in_(list(digests)))
        return list((await self.session.scalars(query)).all())

    async def nearest(
        self,
        scope: Scope,
        queries: Sequence[NearestQuery],
        embed_model: str,
        *,
        index_dim: int | None = None,
        ef_search: int = 100,
        k: int = 1,
    ) -> list[Nearby]:
        """Each query's `k` nearest live memories, nearest first, with their cosines and lexemes, and the
        query's own lexemes, in one statement: an exact scan per query, or with `index_dim` the
        per-model HNSW index (large scopes)."""
        if not queries:
            return []
        if index_dim is None:
            vector_type, embedding, model_filter = "vector", "embedding", "embed_model = :embed_model"
        else:
            dim = int(index_dim)
            # The indexed expression, and the model as a literal, so the partial index matches.
            vector_type, embedding = f"vector({dim})", f"embedding::vector({dim})"
            model_filter = f"embed_model = {model_literal(embed_model)}"
            await use_hnsw_scan(self.session, ef_search)
        # The nearest rows are found once (`nn`, materialised) and then fetched by primary key: joining
        # the lateral search to `memories` let the planner, misled by a fast-growing scope's stale
        # estimates, run the search once per row of the tenant (394 rows: 265 ms instead of 0.3). Every
        # query has a row (its own lexemes), with its neighbours' columns or NULLs.
        sql = text(
            f"""WITH q AS MATERIALIZED (
                    SELECT ord, mtype, subject, CAST(vec AS {vector_type}) AS vec,
                           to_tsvector('english', words)::text AS qtsv
                    FROM unnest(CAST(:ords AS int[]), CAST(:types AS text[]), CAST(:subjects AS text[]),
                                CAST(:vecs AS text[]), CAST(:words AS text[]))
                         AS t(ord, mtype, subject, vec, words))
                , nn AS MATERIALIZED (
                    SELECT q.ord, x.id, x.distance FROM q CROSS JOIN LATERAL (
                        SELECT id, {embedding} <=> q.vec AS distance FROM memories
                        WHERE {scope_sql(scope, live=True)} AND type = q.mtype AND {model_filter}
                          AND embedding IS NOT NULL
                          AND (q.subject IS NULL OR subject IS NULL OR subject = q.subject)
                        ORDER BY distance LIMIT :k) x)
                SELECT {MEMORY_SQL}, q.ord AS ord, 1 - nn.distance AS cosine, m.content_tsv::text AS tsv,
                       q.qtsv AS qtsv
                FROM q LEFT JOIN nn ON nn.ord = q.ord
                LEFT JOIN memories m ON m.tenant_id = :tenant AND m.id = nn.id
                                    AND m.id = ANY (ARRAY(SELECT id FROM nn))
                {ACCESS_JOIN}"""
        ).columns(
            *MEMORY_ATTRIBUTES,
            column("ord", Integer),
            column("cosine", Float),
            column("tsv", Text),
            column("qtsv", Text),
        )
        params = {
            **scope_params(scope),
            "embed_model": embed_model,
            "ords": list(range(len(queries))),
            "types": [str(q.type) for q in queries],
            "subjects": [q.subject for q in queries],
            "vecs": [vector_literal(q.vector) for q in queries],
            "words": [q.words for q in queries],
            "k": k,
        }
        c = sql.selected_columns
        query = select(Memory, c.ord, c.cosine, c.tsv, c.qtsv).from_statement(sql)
        found = [Nearby([], {}) for _ in queries]
        for memory, ord_, cosine, tsv, qtsv in (await self.session.execute(query, params)).all():
            found[ord_].lexemes.update(lexemes_of(qtsv))
            if memory is not None and cosine is not None:
                found[ord_].neighbours.append(Neighbour(memory, float(cosine), lexemes_of(tsv)))
        for nearby in found:
            nearby.neighbours.sort(key=lambda n: -n.cosine)
        return found

    async def slotted_mentioning(
        self, scope: Scope, mtype: MemoryType, value: str, limit: int = 5
    ) -> list[Memory]:
        """Live memories of one type with a slot whose content contains `value`, newest first."""
        query = (
            select(Memory)
            .where(
                scope_clause(scope, live=True),
                Memory.type == mtype,
                Memory.subject.is_not(None),
                Memory.content.ilike(_ilike_contains(value), escape="\\"),
            )
            .order_by(Memory.valid_from.desc())
            .limit(limit)
        )
        return list((await self.session.scalars(query)).all())

    async def live_mentioning(
        self, scope: Scope, value: str, *, exclude: uuid.UUID, limit: int = 5
    ) -> list[Memory]:
        """Live memories of the scope whose content contains `value`, newest first."""
        query = (
            select(Memory)
            .where(
                scope_clause(scope, live=True),
                Memory.id != exclude,
                Memory.content.ilike(_ilike_contains(value), escape="\\"),
            )
            .order_by(Memory.valid_from.desc())
            .limit(limit)
        )
        return list((await self.session.scalars(query)).all())
