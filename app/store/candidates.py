"""Recall's questions: the candidates of one query in a scope, with their raw scores, and the scope's size.

One statement finds the top-k by cosine (of memories and of long memories' passages), the top-k
full-text matches and the protected memories (pinned, critical rules), and loads them as plain rows
with every column the API shows and each long memory's passages with their scores. Its text is in
app/store/candidate_sql.py.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import TextualSelect
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncSession

from app.store.bm25 import TextStats
from app.store.candidate_sql import CANDIDATE_RESULT, CANDIDATE_SELECT, Shape, recall_scope
from app.store.moments import moment_params
from app.store.records import MemoryRecord
from app.store.scope import scope_params
from app.store.sql import (
    ACCESS_JOIN,
    MEMORY_COLUMNS,
    PROTECTED_SQL,
    statement,
    use_hnsw_scan,
    vector_literal,
)
from app.tenancy.types import TenantId
from app.vocabulary import PRESENT, MemoryStatus, MemoryType, Moment, Privacy, Scope, is_protected

_WORD = re.compile(r"[a-z0-9]+")
MAX_QUERY_WORDS = 32


def _words(query: str) -> list[str]:
    return list(dict.fromkeys(w for w in _WORD.findall(query.lower()) if len(w) > 1))[:MAX_QUERY_WORDS]


def or_tsquery(query: str) -> str | None:
    """An OR of the query's words for `to_tsquery`; only [a-z0-9] survive, so it cannot be malformed."""
    words = _words(query)
    return " | ".join(words) if words else None


@dataclass(frozen=True, slots=True)
class PassageRow:
    """One passage of a candidate (app/memory/passages.py): its span of the content, the tokens of its
    line body, and its raw scores (cosine None: no vector of the query's model; BM25 0: no match)."""

    ordinal: int
    start: int
    end: int
    tokens: int
    cosine: float | None
    keyword_rank: float


def passage_scores(
    row: RowMapping,
    p_matched: Sequence[int] | None = None,
    p_matched_ranks: Sequence[float] | None = None,
) -> list[tuple[float | None, float]]:
    """The raw scores (cosine, BM25) of a candidate row's passages, in order (none: empty); the matching
    passages' ordinals and BM25 are the row's own unless given (the text half read ahead)."""
    ordinals = row["p_ordinals"]
    if not ordinals:
        return []
    if p_matched is None:
        p_matched, p_matched_ranks = row["p_matched"], row["p_matched_ranks"]
    matched = dict(zip(p_matched or (), p_matched_ranks or (), strict=True))
    return [
        (None if c is None else float(c), float(matched.get(o, 0.0)))
        for o, c in zip(ordinals, row["p_cosines"], strict=True)
    ]


@dataclass(slots=True)
class CandidateRow:
    """A recall candidate as loaded: what scoring and packing read, its raw cosine and keyword rank.

    Recall scores about a hundred candidates and returns a few, so the full record is built only for
    those (`memory()`): building an ORM object per candidate cost ~3 ms on a 6k-row scope, more than
    scoring. Not frozen, though nothing changes one once loaded: a frozen dataclass sets each of its 19
    fields through `object.__setattr__`, and with the keyword dictionary `of` built it cost ~6.7 us per
    row, ~0.4 ms of a small recall's ~60 candidates. `of` passes the columns by position, in the
    fields' order (tests/unit/test_candidate_row.py holds the two to the same names).
    """

    id: uuid.UUID
    type: MemoryType
    subject: str | None
    content: str
    status: MemoryStatus
    importance: float
    salience: float
    confidence: float
    privacy: Privacy
    project_id: str | None
    valid_from: datetime
    last_accessed_at: datetime | None
    content_hash: str
    content_tokens: int | None
    cosine: float | None
    keyword_rank: float
    columns: RowMapping  # every column the API shows
    keyword_ideal: float = 0.0  # the query's ideal BM25 (app.memory.similarity); 0: the text did not match
    # A long memory's passages' raw scores (cosine, BM25), in order (`passage` builds one): recall shows
    # at most one of a candidate's passages, and building every one cost more than choosing it.
    passage_scores: list[tuple[float | None, float]] = field(default_factory=list)
    # When its neighbours in its conversation were observed: the memories of its user and session just
    # before and just after it in time (None: no session, or none there).
    prev_at: datetime | None = None
    next_at: datetime | None = None

    @classmethod
    def of(cls, row: RowMapping) -> CandidateRow:
        cosine = row["cosine"]
        return cls(
            row["id"],
            row["type"],
            row["subject"],
            row["content"],
            row["status"],
            row["importance"],
            row["salience"],
            row["confidence"],
            row["privacy"],
            row["project_id"],
            row["valid_from"],
            row["last_accessed_at"],
            row["content_hash"],
            row["content_tokens"],
            None if cosine is None else float(cosine),
            float(row["rank"] or 0.0),
            row,
            float(row["ideal"] or 0.0),
            passage_scores(row),
            row["prev_at"],
            row["next_at"],
        )

    @property
    def passages(self) -> tuple[PassageRow, ...]:
        """Every passage of a long memory, in order, with its raw scores (none: empty)."""
        return tuple(self.passage(index) for index in range(len(self.passage_scores)))

    def passage(self, index: int) -> PassageRow:
        """Its `index`-th passage."""
        row = self.columns
        cosine, keyword_rank = self.passage_scores[index]
        return PassageRow(
            row["p_ordinals"][index],
            row["p_starts"][index],
            row["p_ends"][index],
            row["p_tokens"][index],
            cosine,
            keyword_rank,
        )

    @property
    def protected(self) -> bool:
        return is_protected(self.status, self.type)

    @property
    def superseded(self) -> bool:
        return self.status == MemoryStatus.SUPERSEDED

    def memory(self) -> MemoryRecord:
        """The memory as the API shows it."""
        return MemoryRecord(**{name: self.columns[name] for name in MEMORY_COLUMNS})


@dataclass(frozen=True, slots=True)
class KeywordScores:
    """The text half read on its own, before the query's vector was there (`KeywordReads.keyword_scores`,
    or the index of the scope's terms, app/store/terms.py): the BM25 of every matching memory, the
    ordinals and BM25 of a long one's matching passages, the query's ideal BM25, and the ids of the
    top-k. The candidate statement then loads those ids beside the cosine half's and the scores are
    attached here, as the one statement attaches them."""

    ranks: Mapping[uuid.UUID, float]
    passages: Mapping[uuid.UUID, tuple[Sequence[int], Sequence[float]]]
    ideal: float
    top: tuple[uuid.UUID, ...]

    def attach(self, row: CandidateRow) -> None:
        """Give a loaded candidate its BM25 (it keeps 0 when its text did not match)."""
        rank = self.ranks.get(row.id)
        if rank is None:
            return
        row.keyword_rank, row.keyword_ideal = rank, self.ideal
        matched = self.passages.get(row.id)
        if matched is not None:
            row.passage_scores = passage_scores(row.columns, *matched)


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """One recall's question: the query's vector and words in a scope (`Reach.WITH_GLOBAL`)."""

    scope: Scope
    embedding: Sequence[float]
    embed_model: str
    tsquery: str | None
    k: int
    now: datetime
    keyword_cap: int = 2000
    stats: TextStats | None = None  # None: counted by the statement's caller (RecallStore.text_stats)
    k1: float = 1.2
    b: float = 0.75
    moment: Moment = PRESENT  # which rows count as current (the present: live ones)
    neighbours: bool = True  # look up when each candidate's neighbours in its session were observed
    keywords: KeywordScores | None = None  # the text half, read ahead (None: the statement reads it)

    @property
    def shape(self) -> Shape:
        """What its statements are built for. Passages are left out only where the scope's statistics
        say it has no long memory (for a large scope they can be a minute old, as its counts)."""
        passages = self.stats is None or self.stats.long > 0
        read = self.keywords is not None
        words = bool(self.tsquery) and not read
        return Shape(self.scope, self.moment, words, passages, self.neighbours, read)

    def params(self) -> dict[str, Any]:
        params = {
            **self.text_params(),
            "qvec": vector_literal(self.embedding),
            "embed_model": self.embed_model,
        }
        if self.keywords is not None:
            params["kw_ids"] = list(self.keywords.top)
        return params

    def text_params(self) -> dict[str, Any]:
        """The parameters of the text half alone (no vector)."""
        params = {
            **scope_params(self.scope, self.now),
            **moment_params(self.moment),
            "k": self.k,
            "kw_cap": self.keyword_cap,
        }
        if self.tsquery and self.keywords is None:
            params["tsq"] = self.tsquery
            params["words"] = self.tsquery.replace("|", " ")
            params.update(bm25_k1=self.k1, bm25_b=self.b)
            if self.stats is not None:
                params.update(self.stats.params())
        return params


def with_stats(query: CandidateQuery, stats: TextStats | None) -> CandidateQuery:
    return replace(query, stats=stats)


class RecallStore:
    """Recall's reads for one tenant."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def scope_size(self, scope: Scope, now: datetime, cap: int) -> tuple[int, float]:
        """(live rows in scope counted up to `cap`, the planner's estimate of the table's rows)."""
        sql = statement(
            f"""SELECT (SELECT count(*) FROM (SELECT 1 FROM memories WHERE {recall_scope(scope)}
                                              LIMIT :cap) s) AS n,
                       (SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass) AS total"""
        )
        row = (await self.session.execute(sql, {**scope_params(scope, now), "cap": cap})).one()
        return int(row.n), float(row.total)

    async def text_stats(self, scope: Scope, now: datetime, moment: Moment = PRESENT) -> TextStats:
        """BM25's N and mean length over the units of the scope recall reads (exact: one pass over its
        rows and its users' passages): a memory without passages is one unit, a long memory each of its
        passages."""
        sql = statement(Shape(scope, moment).text_stats())
        row = (await self.session.execute(sql, {**scope_params(scope, now), **moment_params(moment)})).one()
        return TextStats(int(row.n), float(row.avgdl), int(row.long))

    async def counted(self, query: CandidateQuery) -> CandidateQuery:
        """The query with BM25's statistics of its scope, counted now unless it has them."""
        if not query.tsquery or query.stats is not None:
            return query
        return with_stats(query, await self.text_stats(query.scope, query.now, query.moment))

    async def candidates(
        self,
        query: CandidateQuery,
        *,
        dim: int,
        use_index: bool,
        single_pass: bool = False,
        ef_search: int = 100,
    ) -> list[CandidateRow]:
        """Top-k by cosine, top-k by full-text rank, plus pinned and critical memories, with raw scores.
        Without `query.tsquery` the text half is left out (as when a spare connection runs
        `keyword_candidates`).

        The text half scores every match by Okapi BM25 (app.store.bm25: idf and length normalisation over
        the scope, which `ts_rank_cd` lacked) and chooses its top-k by it; a candidate the cosine half
        found carries its BM25 too when its text matches. Scoring every match of a broad OR query is the
        expensive part on large scopes, so only the first `keyword_cap` matches are scored (a query that
        broad ranks poorly, and its df are then lower bounds).
        """
        query = await self.counted(query)
        shape = query.shape
        if use_index:
            await use_hnsw_scan(self.session, ef_search)
            sources = shape.index_sources(query.embed_model, dim)
        elif single_pass and shape.tsquery:
            sources = shape.single_pass_sources()
        else:
            sources = shape.exact_sources()
        sql = _candidate_statement(
            f"""WITH {sources},
                always AS (
                    SELECT id FROM memories WHERE {shape.rows} AND {PROTECTED_SQL} LIMIT :k
                ), ids AS MATERIALIZED (
                    SELECT u.id, scored.rank, scored.ideal, scored.p_matched, scored.p_matched_ranks
                    FROM (SELECT id FROM sem UNION SELECT id FROM kw UNION SELECT id FROM always) u
                    LEFT JOIN scored ON scored.id = u.id
                )
                {CANDIDATE_SELECT}
                FROM memories m JOIN ids r ON r.id = m.id {ACCESS_JOIN} {shape.passages_join()}
                {shape.neighbours_join()}
                WHERE m.tenant_id = :tenant AND m.id = ANY (ARRAY(SELECT id FROM ids))"""
        )
        # One round trip; plain rows (see CandidateRow). The rows are fetched by primary key from the
        # id array: joining the candidates' CTE to `memories` let the planner, misled by a fresh table's
        # estimates, scan the scope once per candidate (a 419-row scope: 35 ms instead of 9).
        rows = (await self.session.execute(sql, query.params())).mappings().all()
        loaded = [CandidateRow.of(row) for row in rows]
        if query.keywords is not None:
            for candidate in loaded:
                query.keywords.attach(candidate)
        return loaded

    async def keyword_candidates(self, query: CandidateQuery) -> list[CandidateRow]:
        """The text half of `candidates` on its own: the top-k full-text matches, loaded as candidates."""
        query = await self.counted(query)
        shape = query.shape
        sql = _candidate_statement(
            f"""WITH {shape.scope_matches()}
                {CANDIDATE_SELECT}
                FROM kw r JOIN memories m ON m.tenant_id = :tenant AND m.id = r.id {ACCESS_JOIN}
                {shape.passages_join()} {shape.neighbours_join()}"""
        )
        rows = (await self.session.execute(sql, query.params())).mappings().all()
        return [CandidateRow.of(row) for row in rows]


@lru_cache(maxsize=256)
def _candidate_statement(sql: str) -> TextualSelect:
    """A candidate statement's text with its result columns, built once per distinct text (as
    `statement`)."""
    return statement(sql).columns(*CANDIDATE_RESULT)
