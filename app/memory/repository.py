"""All SQL of the memory domain. Every query names the tenant explicitly; RLS is the second wall."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    Float,
    Integer,
    Select,
    and_,
    cast,
    column,
    func,
    inspect,
    literal_column,
    or_,
    select,
    text,
    tuple_,
)
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import DreamProposal, Memory, MemoryAccess, MemoryEvent
from app.memory.models import MemoryRecord
from app.tenancy.types import TenantId
from app.vocabulary import LIVE_STATUSES, MemoryStatus, ProposalStatus, is_protected

_WORD = re.compile(r"[a-z0-9]+")
MAX_QUERY_WORDS = 32


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, bound as a parameter and cast in SQL."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def or_tsquery(query: str) -> str | None:
    """An OR of the query's words for `to_tsquery`; only [a-z0-9] survive, so it cannot be malformed."""
    words = list(dict.fromkeys(w for w in _WORD.findall(query.lower()) if len(w) > 1))[:MAX_QUERY_WORDS]
    return " | ".join(words) if words else None


@dataclass(frozen=True, slots=True)
class Scope:
    tenant: TenantId
    user_id: str
    project_id: str | None


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """A recall candidate as loaded: what scoring and packing read, its raw cosine and keyword rank.

    Recall scores about a hundred candidates and returns a few, so the ORM object is built only for
    those (`memory()`): building one per candidate cost ~3 ms on a 6k-row scope, more than scoring.
    """

    id: uuid.UUID
    type: str
    subject: str | None
    content: str
    status: str
    importance: float
    salience: float
    confidence: float
    privacy: str
    project_id: str | None
    valid_from: datetime
    last_accessed_at: datetime | None
    content_hash: str
    content_tokens: int | None
    cosine: float | None
    keyword_rank: float
    columns: RowMapping  # every column the API shows

    @classmethod
    def of(cls, row: RowMapping) -> CandidateRow:
        cosine = row["cosine"]
        return cls(
            **{name: row[name] for name in _SCORED_COLUMNS},
            cosine=None if cosine is None else float(cosine),
            keyword_rank=float(row["rank"] or 0.0),
            columns=row,
        )

    @property
    def protected(self) -> bool:
        return is_protected(self.status, self.type)

    def memory(self) -> MemoryRecord:
        """The memory as the API shows it."""
        return MemoryRecord(**{name: self.columns[name] for name in _MEMORY_COLUMNS})


# Every column the API shows (no embedding, no tsvector): what recall loads for its candidates.
_MEMORY_COLUMNS = tuple(f.name for f in fields(MemoryRecord))

# A memory's access count and time live in `memory_access` (`a`, joined by _ACCESS_JOIN; no row: never).
_ACCESS_SQL = {
    "access_count": "coalesce(a.access_count, 0) AS access_count",
    "last_accessed_at": "a.last_accessed_at",
}
_ACCESS_JOIN = "LEFT JOIN memory_access a ON a.tenant_id = m.tenant_id AND a.memory_id = m.id"


def _candidate_column(name: str) -> Any:
    """A candidate column as typed for the result. `tags` is left untyped: asyncpg already returns a
    list of str, and SQLAlchemy's ARRAY processing cost 17 us a row (1.6 ms per large recall)."""
    if name == "tags":
        return column(name)
    if name in _ACCESS_SQL:
        return MemoryAccess.__table__.c[name]
    return Memory.__table__.c[name]


_CANDIDATE_COLUMNS = [_candidate_column(c) for c in _MEMORY_COLUMNS]

# Every column the API shows, as SQL over a memory `m` and its access `a` (joined by _ACCESS_JOIN), and
# as the ORM maps them (a statement that loads `Memory` objects).
_MEMORY_SQL = ", ".join(_ACCESS_SQL.get(c, f"m.{c}") for c in _MEMORY_COLUMNS)
_MEMORY_ATTRIBUTES = [inspect(Memory).columns[c] for c in _MEMORY_COLUMNS]

# What recall's scoring, slot veto and line rendering read of each candidate.
_SCORED_COLUMNS = (
    "id", "type", "subject", "content", "status", "importance", "salience", "confidence", "privacy",
    "project_id", "valid_from", "last_accessed_at", "content_hash", "content_tokens",
)  # fmt: skip

# Matches the partial index ix_memories_always (migration 0004) word for word, so the planner uses it.
_ALWAYS_SQL = "(status = 'pinned' OR (type = 'critical_rule' AND status = 'active'))"

_TSQUERY = ", to_tsquery('english', :tsq) q"

# The predicate of the covering index ix_memories_scope_text and, negated, of ix_memories_scope_long
# (migration 0006), word for word: the rows whose index entry is sure to fit in a btree page.
_SHORT_TSV = (
    "(octet_length(content_tsv::text) + 4 * length(content_tsv)"
    " + octet_length(user_id) + octet_length(coalesce(project_id, '')) <= 2400)"
)
_NO_KEYWORDS = "SELECT NULL::uuid AS id, 0.0::real AS rank WHERE false"

# What a candidate statement returns for each row `m` it loads (`kw`: the text half's ranks; `a`: its
# access, _ACCESS_JOIN), and its types.
_CANDIDATE_SELECT = f"""SELECT {_MEMORY_SQL}, m.content_tokens,
                       CASE WHEN m.embed_model = :embed_model AND m.embedding IS NOT NULL
                            THEN 1 - (m.embedding <=> CAST(:qvec AS vector)) END AS cosine,
                       coalesce(kw.rank, 0) AS rank"""
_CANDIDATE_RESULT = (
    *_CANDIDATE_COLUMNS,
    column("content_tokens", Integer),
    column("cosine", Float),
    column("rank", Float),
)

_SCOPE_SQL = """
    tenant_id = :tenant AND user_id = :user_id AND status IN ('active', 'pinned')
    AND (project_id IS NULL OR project_id = :project_id)
    AND (expires_at IS NULL OR expires_at > :now)"""


def model_literal(embed_model: str) -> str:
    """The model as an SQL literal: the per-model partial HNSW indexes match a literal, not a parameter."""
    return "'" + embed_model.replace("'", "''") + "'"


def _top_matches(source: str) -> str:
    """The text half over `source` (rows with id, content_hash and a matching tsvector `tsv`)."""
    return f"""SELECT id, ts_rank_cd(tsv, q) AS rank
               FROM (SELECT id, tsv, q
                     FROM (SELECT id, content_hash, tsv FROM {source} LIMIT :kw_cap) matched{_TSQUERY}
                     ORDER BY ts_rank(tsv, q) DESC, content_hash LIMIT :k) chosen"""


def _scope_matches(tsquery: str | None) -> str:
    """The text half on its own scan of the scope, which stops at `kw_cap` matches. Most rows are read
    from the covering index ix_memories_scope_text alone; rows too long for it, from the heap."""
    if not tsquery:
        return _NO_KEYWORDS
    match = f"SELECT id, content_hash, content_tsv AS tsv FROM memories{_TSQUERY} WHERE {_SCOPE_SQL}"
    return _top_matches(
        f"""({match} AND {_SHORT_TSV} AND content_tsv @@ q
             UNION ALL
             {match} AND NOT {_SHORT_TSV} AND content_tsv @@ q) scope_matches"""
    )


def _single_pass_sources() -> str:
    """Exact, for scopes up to `single_pass_max_rows` (off by default): one pass over the scope's rows
    computes each row's distance and text match and both halves come from it, so the rows are read
    once. Faster when few rows match (a 6k-row scope, 6% matching: 9 ms instead of 11, against 5 ms for
    the cosine query alone); slower when many do, since it tests and carries every match where the text
    half's own scan stops at `kw_cap` matches (10k rows in one user: recall 19.8 -> 25.7 ms), and past
    ~30k rows it spills out of work_mem (100k rows in one user: 129 -> 162 ms)."""
    # Not the indexed expression (no cast to the model's dimension): the planner scans exactly.
    return f"""scoped AS MATERIALIZED (
                    SELECT id, content_hash,
                           CASE WHEN content_tsv @@ q THEN content_tsv END AS tsv,
                           CASE WHEN embed_model = :embed_model AND embedding IS NOT NULL
                                THEN embedding <=> CAST(:qvec AS vector) END AS distance
                    FROM memories{_TSQUERY}
                    WHERE {_SCOPE_SQL}
                ), sem AS (
                    SELECT id FROM scoped WHERE distance IS NOT NULL ORDER BY distance LIMIT :k
                ), kw AS ({_top_matches("scoped WHERE tsv IS NOT NULL")})"""


def _exact_sources(tsquery: str | None) -> str:
    """Exact, two scans: the cosine half scans the scope (the distance expression does not match the
    index), the text half scans it again."""
    return f"""sem AS (
                    SELECT id FROM memories
                    WHERE {_SCOPE_SQL} AND embed_model = :embed_model AND embedding IS NOT NULL
                    ORDER BY embedding <=> CAST(:qvec AS vector) LIMIT :k
                ), kw AS ({_scope_matches(tsquery)})"""


def _index_sources(embed_model: str, dim: int, tsquery: str | None) -> str:
    """The HNSW plan for large scopes: the index finds the cosine half, a scope scan the text half."""
    # Literals, not parameters, so the planner can match the per-model partial HNSW index.
    return f"""sem AS (
                    SELECT id FROM memories
                    WHERE {_SCOPE_SQL} AND embed_model = {model_literal(embed_model)}
                      AND embedding IS NOT NULL
                    ORDER BY embedding::vector({int(dim)}) <=> CAST(:qvec AS vector({int(dim)})) LIMIT :k
                ), kw AS ({_scope_matches(tsquery)})"""


@dataclass(frozen=True, slots=True)
class Access:
    """Accesses of one memory: how many, and the last one."""

    count: int
    last: datetime | None


# Adds accesses (:ids, :ns, :ats) to the memories' `memory_access` rows. Rows another transaction holds
# are skipped, never waited for: an access row, or for a first access the memory's row (a writer
# replacing it; locked FOR KEY SHARE, which the foreign key check takes anyway). Only a first access
# touches `memories` at all: locking a row writes its page.
_ACCESS_UPSERT = text(
    """WITH p AS (
           SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:ns AS int[]), CAST(:ats AS timestamptz[]))
                         AS p(id, n, at)
       ), held AS (
           SELECT a.memory_id, p.n, p.at FROM memory_access a JOIN p ON p.id = a.memory_id
           WHERE a.tenant_id = :tenant
           ORDER BY a.memory_id FOR UPDATE OF a SKIP LOCKED
       ), bumped AS (
           UPDATE memory_access a
           SET access_count = a.access_count + held.n,
               last_accessed_at = greatest(a.last_accessed_at, held.at)
           FROM held WHERE a.tenant_id = :tenant AND a.memory_id = held.memory_id
           RETURNING a.memory_id, a.access_count, a.last_accessed_at
       ), fresh AS (
           SELECT m.id FROM memories m
           WHERE m.tenant_id = :tenant AND m.id = ANY(CAST(:ids AS uuid[]))
             AND NOT EXISTS (SELECT FROM memory_access a WHERE a.tenant_id = :tenant AND a.memory_id = m.id)
           ORDER BY m.id FOR KEY SHARE OF m SKIP LOCKED
       ), added AS (
           INSERT INTO memory_access (tenant_id, memory_id, access_count, last_accessed_at)
           SELECT :tenant, p.id, p.n, p.at FROM p JOIN fresh ON fresh.id = p.id
           ORDER BY p.id
           ON CONFLICT DO NOTHING
           RETURNING memory_id, access_count, last_accessed_at
       )
       SELECT * FROM bumped UNION ALL SELECT * FROM added"""
)


class MemoryRepository:
    """Reads and writes memories, events and proposals of one tenant."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def _hnsw_settings(self, ef_search: int = 100) -> None:
        """Filtered HNSW keeps scanning until enough rows pass the scope filter (pgvector 0.8)."""
        await self.session.execute(
            text(
                "SELECT set_config('hnsw.iterative_scan', 'strict_order', true), "
                "set_config('hnsw.ef_search', :ef, true)"
            ),
            {"ef": str(ef_search)},
        )

    # -- locks and lookups on the write path ---------------------------------------------------
    async def lock(self, key: str) -> None:
        """Serialise writers on `key` until this transaction ends."""
        await self.session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": key})

    def _live_in_scope(self, scope: Scope) -> list[Any]:
        project = (
            Memory.project_id.is_(None) if scope.project_id is None else Memory.project_id == scope.project_id
        )
        return [
            Memory.tenant_id == self.tenant,
            Memory.user_id == scope.user_id,
            project,
            Memory.status.in_(LIVE_STATUSES),
        ]

    async def current_in_slot(self, scope: Scope, subject: str, mtype: str) -> Memory | None:
        query = (
            select(Memory)
            .where(*self._live_in_scope(scope), Memory.subject == subject, Memory.type == mtype)
            .order_by(Memory.valid_from.desc())
            .limit(1)
        )
        return (await self.session.scalars(query)).first()

    async def live_by_hash(self, scope: Scope, digest: str) -> Memory | None:
        query = select(Memory).where(*self._live_in_scope(scope), Memory.content_hash == digest).limit(1)
        return (await self.session.scalars(query)).first()

    async def nearest_of_type(
        self,
        scope: Scope,
        mtype: str,
        embedding: Sequence[float],
        embed_model: str,
        subject: str | None,
        *,
        index_dim: int | None = None,
        ef_search: int = 100,
    ) -> tuple[Memory, float] | None:
        """The closest live memory of the same type in the same scope that could be the same fact.

        A memory in a different named slot is a different attribute, never a semantic match.
        With `index_dim` (large scopes) the per-model HNSW index answers instead of an exact scan.
        """
        if index_dim is None:
            distance = Memory.embedding.op("<=>", return_type=Float)(text("CAST(:qvec AS vector)"))
            model_condition = Memory.embed_model == embed_model
        else:
            dim = int(index_dim)
            # The indexed expression, and the model as a literal so the partial index matches.
            distance = cast(Memory.embedding, Vector(dim)).op("<=>", return_type=Float)(
                text(f"CAST(:qvec AS vector({dim}))")
            )
            model_condition = Memory.embed_model == literal_column(model_literal(embed_model))
            await self._hnsw_settings(ef_search)
        conditions = [*self._live_in_scope(scope), Memory.type == mtype, model_condition]
        if subject is not None:
            conditions.append(or_(Memory.subject.is_(None), Memory.subject == subject))
        query = select(Memory, distance.label("distance")).where(*conditions).order_by(distance).limit(1)
        row = (await self.session.execute(query, {"qvec": vector_literal(embedding)})).first()
        if row is None or row.distance is None:
            return None
        return row[0], 1.0 - float(row.distance)

    # -- the same lookups for a whole batch (one statement each) -----------------------------------
    async def lock_many(self, keys: Sequence[str]) -> None:
        """`lock` for every key in one statement, taken in the given order (callers sort them)."""
        await self.session.execute(
            text(
                "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) "
                "FROM unnest(CAST(:keys AS text[])) WITH ORDINALITY AS t(k, n)"
            ),
            {"keys": list(keys)},
        )

    async def live_with_hashes(self, scope: Scope, digests: Sequence[str]) -> list[Memory]:
        query = select(Memory).where(*self._live_in_scope(scope), Memory.content_hash.in_(list(digests)))
        return list((await self.session.scalars(query)).all())

    async def slot_currents(self, scope: Scope, slots: Sequence[tuple[str, str]]) -> list[Memory]:
        """`current_in_slot` for every (subject, type) of `slots`: the newest live memory of each."""
        query = (
            select(Memory)
            .where(*self._live_in_scope(scope), tuple_(Memory.subject, Memory.type).in_(list(slots)))
            .order_by(Memory.subject, Memory.type, Memory.valid_from.desc())
            .ext(distinct_on(Memory.subject, Memory.type))
        )
        return list((await self.session.scalars(query)).all())

    async def nearest_many(
        self,
        scope: Scope,
        queries: Sequence[tuple[str, str | None, Sequence[float]]],
        embed_model: str,
        *,
        index_dim: int | None = None,
        ef_search: int = 100,
    ) -> list[tuple[Memory, float] | None]:
        """`nearest_of_type` for every (type, subject, vector) of `queries`, in one statement: an exact scan
        per query, or with `index_dim` the per-model HNSW index (large scopes)."""
        project = "project_id IS NULL" if scope.project_id is None else "project_id = :project_id"
        if index_dim is None:
            vector_type, embedding, model_filter = "vector", "embedding", "embed_model = :embed_model"
        else:
            dim = int(index_dim)
            # The indexed expression, and the model as a literal, so the partial index matches.
            vector_type, embedding = f"vector({dim})", f"embedding::vector({dim})"
            model_filter = f"embed_model = {model_literal(embed_model)}"
            await self._hnsw_settings(ef_search)
        sql = text(
            f"""WITH q AS MATERIALIZED (
                    SELECT ord, mtype, subject, CAST(vec AS {vector_type}) AS vec
                    FROM unnest(CAST(:ords AS int[]), CAST(:types AS text[]), CAST(:subjects AS text[]),
                                CAST(:vecs AS text[])) AS t(ord, mtype, subject, vec))
                SELECT {_MEMORY_SQL}, q.ord AS ord, 1 - nn.distance AS cosine
                FROM q CROSS JOIN LATERAL (
                    SELECT id, {embedding} <=> q.vec AS distance FROM memories
                    WHERE tenant_id = :tenant AND user_id = :user_id AND {project}
                      AND status IN ('active', 'pinned') AND type = q.mtype AND {model_filter}
                      AND embedding IS NOT NULL
                      AND (q.subject IS NULL OR subject IS NULL OR subject = q.subject)
                    ORDER BY distance LIMIT 1) nn
                JOIN memories m ON m.tenant_id = :tenant AND m.id = nn.id {_ACCESS_JOIN}"""
        ).columns(*_MEMORY_ATTRIBUTES, column("ord", Integer), column("cosine", Float))
        params: dict[str, Any] = {
            "tenant": self.tenant,
            "user_id": scope.user_id,
            "embed_model": embed_model,
            "ords": list(range(len(queries))),
            "types": [q[0] for q in queries],
            "subjects": [q[1] for q in queries],
            "vecs": [vector_literal(q[2]) for q in queries],
        }
        if scope.project_id is not None:
            params["project_id"] = scope.project_id
        query = select(Memory, sql.selected_columns.ord, sql.selected_columns.cosine).from_statement(sql)
        found: list[tuple[Memory, float] | None] = [None] * len(queries)
        for memory, ord_, cosine in (await self.session.execute(query, params)).all():
            if cosine is not None:
                found[ord_] = (memory, float(cosine))
        return found

    # -- writes -----------------------------------------------------------------------------------
    def add(self, memory: Memory) -> None:
        self.session.add(memory)

    async def flush(self) -> None:
        await self.session.flush()

    def add_event(
        self,
        *,
        memory_id: uuid.UUID | None,
        user_id: str,
        project_id: str | None,
        kind: str,
        actor: str,
        reason: str | None,
        details: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> None:
        event = MemoryEvent(
            tenant_id=self.tenant,
            memory_id=memory_id,
            user_id=user_id,
            project_id=project_id,
            kind=kind,
            actor=actor,
            reason=reason,
            details=details or {},
        )
        if at is not None:
            event.created_at = at
        self.session.add(event)

    def add_proposal(
        self,
        *,
        scope: Scope,
        kind: str,
        target_ids: list[uuid.UUID],
        payload: dict[str, Any],
        rationale: str,
        model: str | None,
    ) -> DreamProposal:
        proposal = DreamProposal(
            tenant_id=self.tenant,
            id=uuid.uuid4(),
            user_id=scope.user_id,
            project_id=scope.project_id,
            kind=kind,
            target_ids=target_ids,
            payload=payload,
            rationale=rationale,
            status=ProposalStatus.PROPOSED,
            model=model,
        )
        self.session.add(proposal)
        return proposal

    async def reinforce(self, ids: Sequence[uuid.UUID], now: datetime) -> None:
        """One access at `now` for every memory that made it into a context (one statement)."""
        await self.record_access({memory_id: Access(1, now) for memory_id in ids})

    async def record_access(self, accesses: Mapping[uuid.UUID, Access]) -> dict[uuid.UUID, Access]:
        """Add each memory's accesses to its `memory_access` row; returns the rows as they now stand.

        Best effort by design: a memory that no longer exists, whose access row another transaction
        holds, or (on its first access) that a writer holds for update, is skipped, so reinforcement
        neither waits nor deadlocks; its access count then misses an increment, which is all
        reinforcement is. The one wait left is on another transaction inserting the same memory's
        first access row (the background batches bound it with a lock timeout). Rows are locked in id
        order.
        """
        if not accesses:
            return {}
        ids = sorted(accesses)
        params = {
            "tenant": self.tenant,
            "ids": ids,
            "ns": [accesses[i].count for i in ids],
            "ats": [accesses[i].last for i in ids],
        }
        rows = await self.session.execute(_ACCESS_UPSERT, params)
        return {row.memory_id: Access(row.access_count, row.last_accessed_at) for row in rows}

    # -- reads --------------------------------------------------------------------------------------
    async def get(self, memory_id: uuid.UUID, *, for_update: bool = False) -> Memory | None:
        query = select(Memory).where(Memory.tenant_id == self.tenant, Memory.id == memory_id)
        if for_update:
            query = query.with_for_update()
        return (await self.session.scalars(query)).first()

    async def get_many(self, ids: Sequence[uuid.UUID]) -> list[Memory]:
        if not ids:
            return []
        query = select(Memory).where(Memory.tenant_id == self.tenant, Memory.id.in_(list(ids)))
        return list((await self.session.scalars(query)).all())

    async def scope_size(self, scope: Scope, now: datetime, cap: int) -> tuple[int, float]:
        """(live rows in scope counted up to `cap`, the planner's estimate of the table's rows)."""
        sql = text(
            f"""SELECT (SELECT count(*) FROM (SELECT 1 FROM memories WHERE {_SCOPE_SQL} LIMIT :cap) s) AS n,
                       (SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass) AS total"""
        )
        params = {"tenant": self.tenant, "user_id": scope.user_id, "project_id": scope.project_id}
        row = (await self.session.execute(sql, {**params, "now": now, "cap": cap})).one()
        return int(row.n), float(row.total)

    async def candidates(
        self,
        scope: Scope,
        *,
        embedding: Sequence[float],
        embed_model: str,
        dim: int,
        tsquery: str | None,
        k: int,
        now: datetime,
        use_index: bool,
        single_pass: bool = False,
        keyword_cap: int = 2000,
        ef_search: int = 100,
    ) -> list[CandidateRow]:
        """Top-k by cosine, top-k by full-text rank, plus pinned and critical memories, with raw scores.
        Without `tsquery` the text half is left out (as when a spare connection runs `keyword_candidates`).

        The text half chooses its top-k matches by `ts_rank` (term frequency: ranking all ~400 matches of
        a 6k-row scope by `ts_rank_cd` was ~2.5 ms of the statement) and scores those by `ts_rank_cd`
        (cover density, the scale the keyword weight was tuned on); a candidate only the cosine half
        found scores 0 there. Ranking every match of a broad OR query is the expensive part on large
        scopes, so only the first `keyword_cap` matches are ranked (a query that broad ranks poorly).
        """
        if use_index:
            await self._hnsw_settings(ef_search)
            sources = _index_sources(embed_model, dim, tsquery)
        elif single_pass and tsquery:
            sources = _single_pass_sources()
        else:
            sources = _exact_sources(tsquery)
        sql = text(
            f"""WITH {sources},
                always AS (
                    SELECT id FROM memories
                    WHERE {_SCOPE_SQL} AND {_ALWAYS_SQL} LIMIT :k
                ), ids AS (SELECT id FROM sem UNION SELECT id FROM kw UNION SELECT id FROM always)
                {_CANDIDATE_SELECT}
                FROM ids JOIN memories m ON m.tenant_id = :tenant AND m.id = ids.id
                LEFT JOIN kw ON kw.id = ids.id {_ACCESS_JOIN}"""
        ).columns(*_CANDIDATE_RESULT)
        params = self._candidate_params(scope, embedding, embed_model, now, k, keyword_cap, tsquery)
        # One round trip; plain rows (see CandidateRow).
        rows = (await self.session.execute(sql, params)).mappings().all()
        return [CandidateRow.of(row) for row in rows]

    async def keyword_candidates(
        self,
        scope: Scope,
        *,
        embedding: Sequence[float],
        embed_model: str,
        tsquery: str,
        k: int,
        now: datetime,
        keyword_cap: int = 2000,
    ) -> list[CandidateRow]:
        """The text half of `candidates` on its own: the top-k full-text matches, loaded as candidates."""
        sql = text(
            f"""WITH kw AS ({_scope_matches(tsquery)})
                {_CANDIDATE_SELECT}
                FROM kw JOIN memories m ON m.tenant_id = :tenant AND m.id = kw.id {_ACCESS_JOIN}"""
        ).columns(*_CANDIDATE_RESULT)
        params = self._candidate_params(scope, embedding, embed_model, now, k, keyword_cap, tsquery)
        rows = (await self.session.execute(sql, params)).mappings().all()
        return [CandidateRow.of(row) for row in rows]

    def _candidate_params(
        self,
        scope: Scope,
        embedding: Sequence[float],
        embed_model: str,
        now: datetime,
        k: int,
        keyword_cap: int,
        tsquery: str | None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "tenant": self.tenant,
            "user_id": scope.user_id,
            "project_id": scope.project_id,
            "now": now,
            "qvec": vector_literal(embedding),
            "embed_model": embed_model,
            "k": k,
            "kw_cap": keyword_cap,
        }
        if tsquery:
            params["tsq"] = tsquery
        return params

    def list_query(
        self,
        user_id: str,
        *,
        project_id: str | None,
        status: str | None,
        mtype: str | None,
        subject: str | None,
        q: str | None,
    ) -> Select[Memory]:
        conditions: list[Any] = [Memory.tenant_id == self.tenant, Memory.user_id == user_id]
        if project_id is not None:
            conditions.append(Memory.project_id == project_id)
        if status is not None:
            conditions.append(Memory.status == status)
        if mtype is not None:
            conditions.append(Memory.type == mtype)
        if subject is not None:
            conditions.append(Memory.subject == subject)
        if q:
            tsq = or_tsquery(q)
            conditions.append(
                Memory.content_tsv.op("@@")(func.to_tsquery("english", tsq))
                if tsq
                else Memory.content.ilike(q)
            )
        return select(Memory).where(*conditions)

    async def page(
        self, query: Select[Memory], *, after: tuple[datetime, uuid.UUID] | None, limit: int
    ) -> list[Memory]:
        """Keyset pagination, newest first."""
        if after is not None:
            created, mid = after
            query = query.where(
                or_(Memory.created_at < created, and_(Memory.created_at == created, Memory.id < mid))
            )
        query = query.order_by(Memory.created_at.desc(), Memory.id.desc()).limit(limit + 1)
        return list((await self.session.scalars(query)).all())

    async def events_for(self, memory_ids: Sequence[uuid.UUID]) -> list[MemoryEvent]:
        query = (
            select(MemoryEvent)
            .where(MemoryEvent.tenant_id == self.tenant, MemoryEvent.memory_id.in_(list(memory_ids)))
            .order_by(MemoryEvent.created_at.desc(), MemoryEvent.id.desc())
        )
        return list((await self.session.scalars(query)).all())

    async def live_matching(
        self, scope: Scope, *, subject: str | None = None, ids: Sequence[uuid.UUID] | None = None
    ) -> list[Memory]:
        conditions = self._live_in_scope(scope)
        if subject is not None:
            conditions.append(Memory.subject == subject)
        if ids is not None:
            conditions.append(Memory.id.in_(list(ids)))
        return list((await self.session.scalars(select(Memory).where(*conditions))).all())

    async def live_for_user(self, user_id: str, project_id: str | None) -> list[Memory]:
        """Live memories of a user (in a project: that project's and the global ones)."""
        conditions: list[Any] = [
            Memory.tenant_id == self.tenant,
            Memory.user_id == user_id,
            Memory.status.in_(LIVE_STATUSES),
        ]
        if project_id is not None:
            conditions.append(or_(Memory.project_id.is_(None), Memory.project_id == project_id))
        return list((await self.session.scalars(select(Memory).where(*conditions))).all())

    async def stats(self, user_id: str | None, embed_model: str) -> dict[str, Any]:
        conditions: list[Any] = [Memory.tenant_id == self.tenant]
        if user_id is not None:
            conditions.append(Memory.user_id == user_id)
        by_status = dict(
            (
                await self.session.execute(
                    select(Memory.status, func.count()).where(*conditions).group_by(Memory.status)
                )
            ).all()
        )
        by_type = dict(
            (
                await self.session.execute(
                    select(Memory.type, func.count()).where(*conditions).group_by(Memory.type)
                )
            ).all()
        )
        mismatched = await self.session.scalar(
            select(func.count()).where(
                *conditions,
                Memory.status.in_(LIVE_STATUSES),
                or_(Memory.embed_model.is_distinct_from(embed_model), Memory.embedding.is_(None)),
            )
        )
        return {
            "total": sum(by_status.values()),
            "by_status": {str(k): int(v) for k, v in by_status.items()},
            "by_type": {str(k): int(v) for k, v in by_type.items()},
            "mismatched": int(mismatched or 0),
        }

    async def mark_status(self, memory: Memory, status: MemoryStatus, now: datetime) -> None:
        memory.status = status
        memory.updated_at = now

    async def live_mentioning(
        self, user_id: str, text: str, *, exclude: uuid.UUID, limit: int = 5
    ) -> list[Memory]:
        """Live memories of a user whose content contains `text` (case-insensitive), newest first."""
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = (
            select(Memory)
            .where(
                Memory.tenant_id == self.tenant,
                Memory.user_id == user_id,
                Memory.status.in_(LIVE_STATUSES),
                Memory.id != exclude,
                Memory.content.ilike(f"%{escaped}%", escape="\\"),
            )
            .order_by(Memory.valid_from.desc())
            .limit(limit)
        )
        return list((await self.session.scalars(query)).all())

    async def slotted_mentioning(self, scope: Scope, mtype: str, text: str, limit: int = 5) -> list[Memory]:
        """Live memories of one type with a slot whose content contains `text`, newest first."""
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = (
            select(Memory)
            .where(
                *self._live_in_scope(scope),
                Memory.type == mtype,
                Memory.subject.is_not(None),
                Memory.content.ilike(f"%{escaped}%", escape="\\"),
            )
            .order_by(Memory.valid_from.desc())
            .limit(limit)
        )
        return list((await self.session.scalars(query)).all())
