"""Recall's BM25 inside PostgreSQL: the scores the candidate statement gives equal a Python BM25 over the
same scope's tsvectors, a rare word outranks a common one, and other tenants' and users' rows change
nothing (N, df and the mean length are the scope's own, under row-level security)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import set_tenant
from app.embeddings.hashing import HashEmbedder
from app.store.bm25 import TextStats, bm25, document_frequencies
from app.store.candidates import CandidateQuery, CandidateRow, RecallStore, or_tsquery
from app.tenancy.types import TenantId
from app.vocabulary import Reach, Scope
from tests.conftest import Api

# A tsvector's text form: 'lexeme':1,4B 'other':2 (positions optional, quotes doubled inside).
_ENTRY = re.compile(r"'((?:[^']|'')+)'(?::([0-9A-D,]+))?")

COMMON = [
    "The support group met on Tuesday",
    "Support for the old printer ended",
    "She asked the support desk about her laptop, and the support desk called back",
    "The support ticket about the VPN was closed",
    "Our support rota changes in March",
    "Support group snacks were oat cookies",
    "Melanie thanked the support group for the long and kind conversation about painting",
]
RARE = "The zeppelin tour needs support from the museum"
QUERY = "zeppelin support"


def _parse(tsvector: str) -> dict[str, int]:
    """lexeme -> tf (its positions) of a tsvector's text form."""
    return {
        m.group(1).replace("''", "'"): len(m.group(2).split(",")) if m.group(2) else 1
        for m in _ENTRY.finditer(tsvector)
    }


async def _candidates(app_engine: AsyncEngine, tenant: TenantId, query: str) -> list[CandidateRow]:
    embedder = HashEmbedder()
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        q = CandidateQuery(
            Scope(tenant, "u", None, Reach.WITH_GLOBAL),
            embedder.embed_text(query),
            embedder.name,
            or_tsquery(query),
            50,
            datetime.now(UTC),
        )
        return await RecallStore(session, tenant).candidates(q, dim=embedder.dim, use_index=False)


K = TypeVar("K")


async def _stored(
    app_engine: AsyncEngine, tenant: TenantId, sql: str, query: str
) -> tuple[list[Any], set[str]]:
    """The scope's rows as `sql` reads them (a key and a tsvector's text), and the query's lexemes."""
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        stored = list((await session.execute(text(sql))).all())
        lexemes = set(
            await session.scalar(text("SELECT tsvector_to_array(to_tsvector('english', :q))"), {"q": query})
        )
    return stored, lexemes


def _reference(documents: dict[K, dict[str, int]], lexemes: set[str]) -> dict[K, float]:
    """BM25 in Python over `documents` (key -> lexeme -> tf): N, df and the mean length counted here."""
    stats = TextStats(len(documents), sum(len(tfs) for tfs in documents.values()) / len(documents))
    matched = {key: {x: tf for x, tf in tfs.items() if x in lexemes} for key, tfs in documents.items()}
    dfs = document_frequencies(matched.values())
    return {
        key: bm25(matched[key], len(tfs), dfs, stats, k1=1.2, b=0.75)
        for key, tfs in documents.items()
        if matched[key]
    }


async def _python_bm25(app_engine: AsyncEngine, tenant: TenantId, query: str) -> dict[str, float]:
    """BM25 in Python over the scope's rows as stored (the same tsvectors, counted here)."""
    sql = "SELECT id::text, content_tsv::text FROM memories WHERE user_id = 'u'"
    stored, lexemes = await _stored(app_engine, tenant, sql, query)
    return _reference({row_id: _parse(tsv) for row_id, tsv in stored}, lexemes)


async def test_sql_bm25_equals_a_python_bm25_over_the_scope_and_ranks_the_rare_word_first(
    api: Api, other_api: Api, app_engine: AsyncEngine
) -> None:
    for content in [*COMMON, RARE, "Lunch is at noon", "The cat is called Miso"]:
        await api.remember(user_id="u", content=content)
    # The rare word everywhere outside the scope: another user of the tenant, another tenant's user "u".
    for i in range(6):
        await api.remember(user_id="v", content=f"Zeppelin number {i} landed in hangar {i}")
        await other_api.remember(user_id="u", content=f"Zeppelin flight {i} was delayed by wind")
    tenant = TenantId(api.tenant_id)

    rows = await _candidates(app_engine, tenant, QUERY)
    expected = await _python_bm25(app_engine, tenant, QUERY)

    got = {str(r.id): r.keyword_rank for r in rows if r.keyword_rank > 0}
    assert set(got) == set(expected)
    assert len(got) == len(COMMON) + 1
    for row_id, score in expected.items():
        assert got[row_id] == pytest.approx(score, rel=1e-9), row_id
    by_rank = sorted(rows, key=lambda r: -r.keyword_rank)
    assert by_rank[0].content == RARE
    # The row with "support" twice outranks the long row holding it once.
    ranked = [r.content for r in by_rank]
    assert ranked.index(COMMON[2]) < ranked.index(COMMON[6])


async def test_a_scope_without_matches_scores_no_keywords(api: Api, app_engine: AsyncEngine) -> None:
    await api.remember(user_id="u", content="The cat is called Miso")
    rows = await _candidates(app_engine, TenantId(api.tenant_id), "zeppelin")
    assert rows
    assert all(r.keyword_rank == 0 for r in rows)


async def _python_units_bm25(
    app_engine: AsyncEngine, tenant: TenantId, query: str
) -> dict[tuple[str, int | None], float]:
    """BM25 in Python over the scope's units as stored: each memory without passages, and each passage
    of a long memory (never a long memory's whole text)."""
    sql = (
        "SELECT m.id::text, p.ordinal, coalesce(p.content_tsv, m.content_tsv)::text"
        " FROM memories m LEFT JOIN memory_passages p"
        " ON p.tenant_id = m.tenant_id AND p.memory_id = m.id WHERE m.user_id = 'u'"
    )
    stored, lexemes = await _stored(app_engine, tenant, sql, query)
    return _reference({(row_id, ordinal): _parse(tsv) for row_id, ordinal, tsv in stored}, lexemes)


async def test_a_long_memory_is_scored_by_its_passages_as_units_of_their_own(
    api: Api, app_engine: AsyncEngine
) -> None:
    for content in [*COMMON, "Lunch is at noon"]:
        await api.remember(user_id="u", content=content)
    filler = " ".join(
        f"Item {i} of the museum inventory lists a painted vase and a clock." for i in range(24)
    )
    long = f"{filler} The zeppelin hangar asked the museum for support with the tour. {filler}"
    long_id = (await api.remember(user_id="u", content=long))["memory"]["id"]
    tenant = TenantId(api.tenant_id)

    rows = await _candidates(app_engine, tenant, QUERY)
    expected = await _python_units_bm25(app_engine, tenant, QUERY)

    assert any(ordinal is not None for _, ordinal in expected)  # the long memory matched through passages
    [memory] = [r for r in rows if str(r.id) == long_id]
    assert memory.passages
    by_ordinal = {p.ordinal: p.keyword_rank for p in memory.passages}
    for (row_id, ordinal), score in expected.items():
        if row_id == long_id:
            assert by_ordinal[ordinal] == pytest.approx(score, rel=1e-9), ordinal
        else:
            [row] = [r for r in rows if str(r.id) == row_id]
            assert row.keyword_rank == pytest.approx(score, rel=1e-9), row_id
    # The memory's own BM25 is its best passage's, and only the passage with the rare word holds it.
    assert memory.keyword_rank == pytest.approx(max(by_ordinal.values()), rel=1e-9)
    best = max(memory.passages, key=lambda p: p.keyword_rank)
    assert "zeppelin" in long[best.start : best.end]
