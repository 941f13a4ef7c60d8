"""Recall's text half on a spare connection (app/db/spare.py): the same candidates as one statement, only
the tenant's own rows, never after the transaction wrote, and never a wait for a connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.context import RequestContext
from app.db.session import create_engine, set_tenant
from app.db.spare import SpareReads
from app.embeddings.base import Embedder
from app.embeddings.hashing import HashEmbedder
from app.lib.clock import Clock, FrozenClock, SystemClock
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.memory.models import RecallInput, RecallResult, RememberInput
from app.memory.service import MemoryService
from app.tenancy.types import TenantId
from tests.conftest import Api
from tests.integration.test_recall_keywords_ahead import AHEAD_MARK, SlowModel
from tests.support.database import TestDatabase
from tests.support.spare import CountingSpare
from tests.support.statements import statements_sent

FACTS = (
    "The zeppelin hangar is in Friedrichshafen",
    "Our zeppelin tour starts at nine on Saturdays",
    "The build runs on Fridays after the zeppelin demo",
    "The cat is called Miso",
    "Lunch is at noon in the hangar canteen",
    "The office plant is a fern",
    "We deploy the hangar app with Kubernetes",
)
QUERIES = ("zeppelin hangar", "when does the tour start", "hangar canteen lunch", "Miso the cat", "fern")


@pytest.fixture
async def spare(database: TestDatabase) -> AsyncIterator[CountingSpare]:
    reads = CountingSpare(database.app_url, 1)
    yield reads
    await reads.dispose()


def _settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"spare_keyword_min_rows": 0, "term_index_max_rows": 0})


def _service(
    session: AsyncSession,
    tenant: TenantId,
    settings: Settings,
    spare: SpareReads | None,
    clock: Clock | None = None,
    embedder: Embedder | None = None,
) -> MemoryService:
    ctx = RequestContext.build(
        session,
        tenant,
        "test",
        embedder=embedder or HashEmbedder(),
        settings=_settings(settings),
        clock=clock or SystemClock(),
        counter=TokenCounter(),
        spare=spare,
    )
    return MemoryService(ctx)


async def _recall(
    database: TestDatabase,
    settings: Settings,
    tenant: TenantId,
    spare: SpareReads | None,
    query: str,
    engine: AsyncEngine | None = None,
    clock: Clock | None = None,
    embedder: Embedder | None = None,
) -> RecallResult:
    """One recall in its own transaction, on `engine`'s pool or a pool of its own, at `clock`'s time.

    Recalls compared with each other share a frozen clock: the recency term moves with the time between
    them (on a loaded machine a second or more), which changes the sixth decimal of a score."""
    own = engine is None
    engine = engine or create_engine(database.app_url, pool_size=1, max_overflow=0)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
            await set_tenant(session, tenant)
            request = RecallInput(user_id="u", query=query, min_relevance=0, token_budget=8192)
            return await _service(session, tenant, settings, spare, clock, embedder).recall(request)
    finally:
        if own:
            await engine.dispose()


async def _with_facts(api: Api) -> TenantId:
    for fact in FACTS:
        await api.remember(user_id="u", content=fact)
    return TenantId(api.tenant_id)


def _seen(result: RecallResult) -> list[tuple[Any, ...]]:
    """What recall chose and why: each memory with its cosine and keyword scores, and every skip. Scores
    to 4 decimals: the two recalls run on the real clock (and the first reinforces what it returns), so
    recency and salience decay between them; on a loaded machine that moved a score's 6th decimal."""
    chosen = [
        (m.memory.id, m.components["semantic"], m.components["keyword"], round(m.score, 4))
        for m in result.memories
    ]
    skipped = sorted((s.id, s.reason, round(s.score, 4)) for s in result.skipped)
    return [result.candidates, result.context, chosen, skipped]


async def test_the_text_half_apart_recalls_what_one_statement_recalls(
    api: Api, database: TestDatabase, settings: Settings, spare: CountingSpare
) -> None:
    tenant = await _with_facts(api)
    clock = FrozenClock()
    for query in QUERIES:
        alone = await _recall(database, settings, tenant, None, query, clock=clock)
        apart = await _recall(database, settings, tenant, spare, query, clock=clock)
        assert _seen(apart) == _seen(alone), query
    assert spare.started == len(QUERIES)
    # Both halves contributed: keyword scores come only from the text half, cosine only from the other.
    zeppelin = await _recall(database, settings, tenant, spare, "zeppelin hangar")
    assert any(m.components["keyword"] > 0 for m in zeppelin.memories)
    assert any(m.components["semantic"] > 0 and m.components["keyword"] == 0 for m in zeppelin.memories)


async def test_a_remote_model_lets_the_text_half_be_read_ahead_instead_of_on_the_spare_connection(
    api: Api, database: TestDatabase, settings: Settings, spare: CountingSpare
) -> None:
    """While an API embeds the query the text half is read on the request's own connection: as fast at
    the largest bench.perf scope, and every cosine candidate keeps its BM25 (docs/RANKING.md)."""
    tenant = await _with_facts(api)
    clock = FrozenClock()
    engine = create_engine(database.app_url, pool_size=1, max_overflow=0)
    try:
        for query in QUERIES:
            read = asyncio.Event()

            def sent(statement: str, read: asyncio.Event = read) -> None:
                if AHEAD_MARK in statement:
                    read.set()

            with statements_sent(engine, each=sent):
                ahead = await _recall(
                    database, settings, tenant, spare, query, engine, clock, SlowModel(read)
                )
            assert read.is_set(), query
            alone = await _recall(database, settings, tenant, None, query, clock=clock)
            assert _seen(ahead) == _seen(alone), query
    finally:
        await engine.dispose()
    assert spare.started == 0


async def test_the_spare_connection_reads_only_the_tenants_rows(
    api: Api, other_api: Api, database: TestDatabase, settings: Settings, spare: CountingSpare
) -> None:
    mine = {(await api.remember(user_id="u", content=fact))["memory"]["id"] for fact in FACTS[:3]}
    for fact in FACTS[:3]:  # the same words, the same user id, another tenant
        await other_api.remember(user_id="u", content=fact)
    result = await _recall(database, settings, TenantId(api.tenant_id), spare, "zeppelin hangar")
    assert spare.started == 1
    assert {str(m.memory.id) for m in result.memories} == mine
    assert {m.memory.tenant_id for m in result.memories} == {api.tenant_id}


async def test_after_a_write_the_text_half_stays_in_the_transaction_that_sees_it(
    api: Api, database: TestDatabase, settings: Settings, spare: CountingSpare
) -> None:
    tenant = TenantId(api.tenant_id)
    await api.remember(user_id="u", content="The cat is called Miso")
    engine = create_engine(database.app_url, pool_size=1, max_overflow=0)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
            await set_tenant(session, tenant)
            service = _service(session, tenant, settings, spare)
            written = await service.remember(
                RememberInput(user_id="u", content="The quokka enclosure opens at ten")
            )
            result = await service.recall(RecallInput(user_id="u", query="quokka", min_relevance=0))
    finally:
        await engine.dispose()
    # A spare connection cannot see the uncommitted row: its words would have scored 0.
    assert spare.started == 0
    keyword = {m.memory.id: m.components["keyword"] for m in result.memories}
    assert keyword[written.memory.id] > 0


async def test_with_every_spare_connection_busy_recall_does_not_wait(
    api: Api, database: TestDatabase, settings: Settings, spare: CountingSpare
) -> None:
    tenant = await _with_facts(api)
    clock = FrozenClock()
    alone = await _recall(database, settings, tenant, None, "zeppelin hangar", clock=clock)
    release = asyncio.Event()

    async def hold(session: AsyncSession) -> None:
        await session.execute(text("SELECT 1"))
        await release.wait()

    holder = spare.start(tenant, hold)  # the pool's only connection
    assert holder is not None
    busy = await asyncio.wait_for(
        _recall(database, settings, tenant, spare, "zeppelin hangar", clock=clock), timeout=30
    )
    release.set()
    await holder
    assert spare.started == 1  # only the holder: recall read both halves in one statement
    assert _seen(busy) == _seen(alone)


async def test_a_failed_spare_read_is_read_on_the_requests_connection(
    api: Api, database: TestDatabase, settings: Settings
) -> None:
    tenant = await _with_facts(api)
    clock = FrozenClock()
    alone = await _recall(database, settings, tenant, None, "zeppelin hangar", clock=clock)
    # A role that does not exist: every spare read fails when it connects.
    broken = CountingSpare(database.app_url.replace("engram_app", "engram_nobody"), 1)
    try:
        recalled = await _recall(database, settings, tenant, broken, "zeppelin hangar", clock=clock)
    finally:
        await broken.dispose()
    assert broken.started == 1
    assert _seen(recalled) == _seen(alone)


async def test_while_other_requests_hold_connections_the_text_half_stays_in_the_statement(
    api: Api, database: TestDatabase, settings: Settings
) -> None:
    tenant = await _with_facts(api)
    requests = create_engine(database.app_url, pool_size=3, max_overflow=0)
    spare = CountingSpare(database.app_url, 1, beside=requests)
    clock = FrozenClock()
    try:
        async with requests.connect() as other:  # another request, mid-transaction
            await other.execute(text("SELECT 1"))
            busy = await _recall(database, settings, tenant, spare, "zeppelin hangar", requests, clock)
        assert spare.started == 0  # its core was not spare: both halves ran in one statement
        idle = await _recall(database, settings, tenant, spare, "zeppelin hangar", requests, clock)
        assert spare.started == 1
    finally:
        await spare.dispose()
        await requests.dispose()
    assert _seen(busy) == _seen(idle)
