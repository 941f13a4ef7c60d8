"""Recall's text half read on its own, before the query's vector is there: in SQL, while a remote model
embeds the query (`keyword_scores`), or from the process's index of the scope's terms (`text_half`,
app/store/terms.py). Either gives `KeywordScores`, which the candidate statement loads beside the cosine
half's (`bm25.known_keyword_ctes`) and attaches as the one statement would.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.spare import SpareReads, sees_same_rows
from app.store.candidate_sql import UNIT_TERMS, term_listing
from app.store.candidates import CandidateQuery, KeywordScores, RecallStore
from app.store.moments import moment_params
from app.store.scope import scope_params
from app.store.sql import statement
from app.store.terms import MemoryTerms, ScopeTerms, TermIndex, TextHalf, UnitTerms
from app.tenancy.types import TenantId
from app.vocabulary import Scope


class KeywordReads:
    """The text half's reads apart from the candidate statement, for one tenant."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def keyword_scores(self, query: CandidateQuery) -> KeywordScores:
        """The text half of `candidates` on its own, needing no vector (recall reads it while the query
        is embedded): the BM25 of every match, as the candidate statement computes it, and its top-k."""
        query = await RecallStore(self.session, self.tenant).counted(query)
        # One row of flat arrays: hundreds of matches cost a row's decoding, not hundreds of rows'.
        sql = statement(
            f"""WITH {query.shape.scope_matches()}
                SELECT (SELECT array_agg(id) FROM scored) AS ids,
                       (SELECT array_agg(rank) FROM scored) AS ranks,
                       (SELECT max(ideal) FROM scored) AS ideal,
                       (SELECT array_agg(id) FROM kw) AS top,
                       p.ids AS p_ids, p.ordinals AS p_ordinals, p.ranks AS p_ranks
                FROM (SELECT array_agg(s.id) AS ids, array_agg(u.ordinal) AS ordinals,
                             array_agg(u.rank) AS ranks
                      FROM scored s, unnest(s.p_matched, s.p_matched_ranks) AS u(ordinal, rank)) p"""
        )
        row = (await self.session.execute(sql, query.text_params())).one()
        matched: dict[uuid.UUID, tuple[list[int], list[float]]] = {}
        passages = zip(row.p_ids or (), row.p_ordinals or (), row.p_ranks or (), strict=True)
        for memory, ordinal, rank in passages:
            ordinals, ranks = matched.setdefault(memory, ([], []))
            ordinals.append(ordinal)
            ranks.append(rank)
        return KeywordScores(
            dict(zip(row.ids or (), map(float, row.ranks or ()), strict=True)),
            matched,
            float(row.ideal or 0.0),
            tuple(row.top or ()),
        )

    async def text_half(
        self,
        index: TermIndex,
        query: CandidateQuery,
        max_rows: int,
        budget: int,
        spare: SpareReads | None = None,
    ) -> TextHalf | None:
        """The text half, with the scope's size and statistics, from the process's index of the scope's
        terms (app/store/terms.py). One statement confirms the scope is as the index last listed it,
        or lists it; the terms of rows not indexed yet (or changed since) are read on a `spare`
        connection apart from the recall, all of them, a piece of `budget` content tokens a statement;
        with none free (or none given) this recall reads one piece itself. None: the scope has more
        than `max_rows` rows (its index is let go), or rows are left to read (the statement answers)."""
        assert query.tsquery
        terms = index.scope(query.scope)
        known = terms.listed  # what this recall's statement compares with, whatever others do meanwhile
        params = {
            **scope_params(query.scope, query.now),
            **moment_params(query.moment),
            "cap": max_rows + 1,
            "words": query.tsquery.replace("|", " "),
            "known_rows": -1 if known is None else known.rows,
            "known_total": 0 if known is None else known.total,
        }
        row = (await self.session.execute(statement(term_listing(query.shape.rows)), params)).one()
        if row.n > max_rows:
            index.too_large(query.scope)  # a large scope's text half is the statement's
            return None
        if row.ids is None and known is not None:
            listed = known
        else:
            ids, fingerprints = row.ids or [], row.fingerprints or []
            missing = terms.missing(ids, fingerprints)
            if missing:
                key = query.scope
                if index.reading(key) or self._read_apart(index, key, terms, missing, budget, spare):
                    return None  # read apart: the statement answers meanwhile
                read = await read_unit_terms(self.session, self.tenant, missing, budget)
                index.add(query.scope, terms, read)
                if len(read) < len(missing):
                    return None
            listed = terms.list(ids, int(row.total))
        return terms.score(listed, row.lexemes or (), k=query.k, k1=query.k1, b=query.b)

    def _read_apart(
        self,
        index: TermIndex,
        key: Scope,
        terms: ScopeTerms,
        missing: list[uuid.UUID],
        budget: int,
        spare: SpareReads | None,
    ) -> bool:
        """Start reading `missing` into the scope's index on a spare connection; False when there is
        none free (or the request wrote rows another connection cannot see yet)."""
        if spare is None or not sees_same_rows(self.session):
            return False
        tenant = self.tenant

        async def read(session: AsyncSession) -> None:
            left = missing
            while left and index.holds(key, terms):  # replaced meanwhile: its successor reads afresh
                read = await read_unit_terms(session, tenant, left, budget)
                if not read:  # the rest are gone
                    return
                index.add(key, terms, read)
                done = {memory for memory, *_ in read}
                left = [memory for memory in left if memory not in done]

        task = spare.start(tenant, read)
        if task is None:
            return False
        index.read_apart(key, task)
        return True


async def read_unit_terms(
    session: AsyncSession, tenant: TenantId, ids: list[uuid.UUID], budget: int
) -> list[MemoryTerms]:
    """The fingerprint, content hash and units' terms (its passages', or its own) of the first of
    these memories (by id) that fit in `budget` content tokens, at least one."""
    params = {"tenant": tenant, "ids": ids, "budget": budget}
    rows = (await session.execute(statement(UNIT_TERMS), params)).all()
    read: dict[uuid.UUID, tuple[int, str]] = {}
    units: dict[uuid.UUID, list[UnitTerms]] = {}
    for row in rows:
        if row.ordinal is None:
            read[row.id] = (int(row.fingerprint), row.content_hash)
        units.setdefault(row.id, []).append((row.ordinal, row.lexemes or (), row.counts or ()))
    return [(memory, *known, units[memory]) for memory, known in read.items()]
