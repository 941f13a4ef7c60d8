"""Recall's text half from the process's index of a scope's terms (app/store/terms.py): the same BM25,
passages, ideal and top-k as the statement's text half on the same rows, kept exact through writes by
other transactions and by the recall's own, never across tenants; and a recall through it is the recall
the statement gives."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.session import set_tenant
from app.db.spare import SpareReads
from app.embeddings import HashEmbedder
from app.embeddings.base import EmbedderWrapper
from app.lib.clock import FrozenClock, SystemClock
from app.lib.settings import Settings
from app.memory.models import RecallInput, RecallResult, RememberInput
from app.store import Store
from app.store.candidates import CandidateQuery, KeywordScores, or_tsquery
from app.store.sql import use_hnsw_scan
from app.store.terms import TermIndex, TextHalf
from app.tenancy.types import TenantId
from app.vocabulary import Moment, Reach, Scope
from tests.conftest import Api
from tests.integration.test_passages import FILLER, NEEDLE, QUESTION, long_text
from tests.support.contexts import memory_service
from tests.support.database import TestDatabase
from tests.support.spare import HeldSpare
from tests.support.statements import statements_sent

USER = "reader"
QUERIES = (
    QUESTION,
    "Which evenings does the library keep late hours?",
    "tomatoes on the fence and the garden",
    "pasta vegetables fridge sister podcast maps",
    "xylophone quartz zeppelin",  # no word matches
)
LISTING = "AS fingerprint FROM memories"  # the index's listing statement
TERMS = "unnest(m.content_tsv)"  # the statement reading rows' terms
READ = Settings().term_index_read_tokens  # content tokens read into the index a recall


def _query(tenant: TenantId, words: str, *, k: int = 5, moment: Moment | None = None) -> CandidateQuery:
    tsquery = or_tsquery(words)
    assert tsquery
    scope = Scope(tenant, USER, None, Reach.WITH_GLOBAL)
    now = datetime.now(UTC)
    return CandidateQuery(scope, (), "none", tsquery, k, now, 1000, moment=moment or Moment())


def _same(sql: KeywordScores, indexed: TextHalf) -> None:
    assert indexed.ranks == sql.ranks
    assert {m: sorted(zip(*p, strict=True)) for m, p in indexed.passages.items()} == {
        m: sorted(zip(*p, strict=True)) for m, p in sql.passages.items()
    }
    assert indexed.ideal == sql.ideal
    assert indexed.top == sql.top


async def _both(session: AsyncSession, tenant: TenantId, index: TermIndex, words: str) -> TextHalf:
    """The index's text half, checked against the statement's on the same rows."""
    store, query = Store(session, tenant, "test"), _query(tenant, words)
    indexed = await store.keywords.text_half(index, query, 5000, READ)
    assert indexed is not None
    assert indexed.stats == await store.recall.text_stats(query.scope, query.now)
    _same(await store.keywords.keyword_scores(query), indexed)
    return indexed


async def _check(engine: AsyncEngine, tenant: TenantId, index: TermIndex, words: str) -> TextHalf:
    async with async_sessionmaker(engine)() as session, session.begin():
        await set_tenant(session, tenant)
        return await _both(session, tenant, index, words)


async def _remember_all(api: Api, contents: Sequence[str]) -> list[str]:
    return [(await api.remember(user_id=USER, content=c, type="episodic"))["memory"]["id"] for c in contents]


async def test_the_index_scores_as_the_statement_does_with_passages(
    api: Api, app_engine: AsyncEngine
) -> None:
    tenant = TenantId(api.tenant_id)
    await api.remember(user_id=USER, content=long_text(), type="episodic")  # stored with passages
    await _remember_all(api, [*FILLER, NEEDLE.replace("basement", "garage"), "garden garden garden fence"])
    index = TermIndex()
    for words in QUERIES:
        half = await _check(app_engine, tenant, index, words)
        assert bool(half.ranks) is (words != QUERIES[-1])
        if words == QUESTION:  # the long memory is found by its passage
            assert half.passages
    # A past moment lists superseded rows too; the same units answer it.
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        store, query = Store(session, tenant, "test"), _query(tenant, QUESTION, moment=Moment(past=True))
        indexed = await store.keywords.text_half(index, query, 5000, READ)
        assert indexed is not None
        _same(await store.keywords.keyword_scores(query), indexed)


async def test_writes_of_other_transactions_are_seen_by_the_next_recall(
    api: Api, app_engine: AsyncEngine
) -> None:
    tenant = TenantId(api.tenant_id)
    first, second, third = await _remember_all(
        api, ["The staging server runs on port 8443", "The production server runs on port 443", FILLER[0]]
    )
    index = TermIndex()
    half = await _check(app_engine, tenant, index, "staging server port")
    assert set(half.ranks) == {uuid.UUID(first), uuid.UUID(second)}

    with statements_sent(app_engine) as statements:  # unchanged: listed, nothing read again
        await _check(app_engine, tenant, index, "staging server port")
    assert sum(LISTING in s for s in statements) == 1
    assert not any(TERMS in s for s in statements)

    [fourth] = await _remember_all(api, ["A new staging box replaced the old one"])
    half = await _check(app_engine, tenant, index, "staging")
    assert set(half.ranks) == {uuid.UUID(first), uuid.UUID(fourth)}

    response = await api.patch(f"/v1/memories/{third}", {"subject": "staging"})  # the subject is indexed
    assert response.status_code == 200, response.text
    half = await _check(app_engine, tenant, index, "staging")
    assert uuid.UUID(third) in half.ranks

    response = await api.patch(f"/v1/memories/{fourth}", {"content": "A new build box replaced the old one"})
    assert response.status_code == 200, response.text
    half = await _check(app_engine, tenant, index, "staging")
    assert uuid.UUID(fourth) not in half.ranks
    assert uuid.UUID(fourth) in (await _check(app_engine, tenant, index, "build box")).ranks

    response = await api.post("/v1/forget", {"user_id": USER, "memory_id": first})
    assert response.status_code == 200, response.text
    half = await _check(app_engine, tenant, index, "staging server port")
    assert uuid.UUID(first) not in half.ranks
    assert half.stats.rows == 3


async def test_a_memory_erased_and_imported_again_under_its_id_is_read_again(
    api: Api, app_engine: AsyncEngine
) -> None:
    """An import keeps a document's memory id when the tenant no longer holds it: after an erase, the same
    id can come back with other words, and the index must not take it for the row it read."""
    tenant = TenantId(api.tenant_id)
    [memory] = await _remember_all(api, ["The zeppelin hangar opens at dawn"])
    index = TermIndex()
    assert set((await _check(app_engine, tenant, index, "zeppelin breakfast")).ranks) == {uuid.UUID(memory)}
    document = (await api.get("/v1/export", user_id=USER)).json()
    assert (await api.post(f"/v1/users/{USER}/erase", {})).status_code == 200
    [exported] = document["memories"]
    exported["content"] = "Breakfast is served at seven"
    imported = await api.post("/v1/import", document)
    assert imported.status_code == 200, imported.text
    assert imported.json()["remapped"] == 0  # the same id
    half = await _check(app_engine, tenant, index, "zeppelin breakfast")
    assert set(half.ranks) == {uuid.UUID(memory)}


async def test_the_recalls_own_uncommitted_changes_are_seen(api: Api, app_engine: AsyncEngine) -> None:
    """A row written and changed by one transaction keeps its version (`xmin`): the change is seen by
    what else the fingerprint holds, its subject and content hash."""
    tenant = TenantId(api.tenant_id)
    await _remember_all(api, [FILLER[1]])
    index = TermIndex()
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        written = await memory_service(session, tenant, HashEmbedder()).remember(
            RememberInput(user_id=USER, content=FILLER[2])
        )
        memory = written.memory.id
        assert set((await _both(session, tenant, index, "library zeppelin")).ranks) == {memory}
        update = "UPDATE memories SET {} WHERE id = :id"
        await session.execute(text(update.format("subject = 'zeppelin'")), {"id": memory})
        assert set((await _both(session, tenant, index, "zeppelin")).ranks) == {memory}
        changed = "subject = NULL, content = 'hangar', content_hash = 'h'"
        await session.execute(text(update.format(changed)), {"id": memory})
        assert not (await _both(session, tenant, index, "library zeppelin")).ranks
        assert set((await _both(session, tenant, index, "hangar")).ranks) == {memory}
        await session.rollback()
    assert not (await _check(app_engine, tenant, index, "library zeppelin hangar")).ranks  # as before


async def test_passages_built_later_are_read_into_the_index(api: Api, app_engine: AsyncEngine) -> None:
    """Re-embed building a long memory's passages changes nothing else of its row: its `terms_version`
    moves on all the same, so the index reads its units again instead of ranking it whole."""
    tenant = TenantId(api.tenant_id)
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        whole = memory_service(session, tenant, HashEmbedder(), settings=Settings(passage_tokens=0))
        await whole.remember(RememberInput(user_id=USER, content=long_text(), type="episodic"))
    index = TermIndex()
    assert not (await _check(app_engine, tenant, index, QUESTION)).passages
    assert (await api.post("/v1/reembed", {})).json() == {"reembedded": 1, "remaining": 0}
    assert (await _check(app_engine, tenant, index, QUESTION)).passages


async def test_tenants_sharing_an_index_never_see_each_others_rows(
    api: Api, other_api: Api, app_engine: AsyncEngine
) -> None:
    index = TermIndex()
    mine = await api.remember(user_id=USER, content="The zeppelin hangar opens at dawn")
    await other_api.remember(user_id=USER, content="Breakfast is served at seven")
    for client, expected in ((api, {uuid.UUID(mine["memory"]["id"])}), (other_api, set())):
        half = await _check(app_engine, TenantId(client.tenant_id), index, "zeppelin hangar breakfast")
        assert expected <= set(half.ranks)
        if client is other_api:
            assert uuid.UUID(mine["memory"]["id"]) not in half.ranks
            assert half.stats.rows == 1


async def test_a_scope_past_the_limit_is_left_to_the_statement(api: Api, app_engine: AsyncEngine) -> None:
    tenant = TenantId(api.tenant_id)
    await _remember_all(api, FILLER[:3])
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        store, index = Store(session, tenant, "test"), TermIndex()
        assert await store.keywords.text_half(index, _query(tenant, "garden library"), 2, READ) is None
        assert index.units == 0  # nothing was read
        assert await store.keywords.text_half(index, _query(tenant, "garden library"), 3, READ) is not None
        assert index.units == 3
        assert await store.keywords.text_half(index, _query(tenant, "garden library"), 2, READ) is None
        assert index.units == 0  # grown past the limit: its units are let go


async def _plans(session: AsyncSession) -> str:
    return str((await session.execute(text("SELECT current_setting('plan_cache_mode')"))).scalar_one())


async def test_only_a_scope_the_index_answers_runs_on_generic_plans(
    api: Api, app_engine: AsyncEngine
) -> None:
    """The listing that lets the index answer also lets the candidate statement run on the plan its
    connection made once; a scope left to the statement, an HNSW scan and the next transaction are
    planned as PostgreSQL chooses."""
    tenant = TenantId(api.tenant_id)
    await _remember_all(api, FILLER[:3])
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        store, index = Store(session, tenant, "test"), TermIndex()
        assert await _plans(session) == "auto"
        assert await store.keywords.text_half(index, _query(tenant, "garden library"), 2, READ) is None
        assert await _plans(session) == "auto"
        assert await store.keywords.text_half(index, _query(tenant, "garden library"), 3, READ) is not None
        assert await _plans(session) == "force_generic_plan"
        await use_hnsw_scan(session, 40)
        assert await _plans(session) == "auto"
        assert await store.keywords.text_half(index, _query(tenant, "garden library"), 3, READ) is not None
        assert await _plans(session) == "force_generic_plan"
    async with async_sessionmaker(app_engine)() as session, session.begin():
        assert await _plans(session) == "auto"


async def test_an_operators_plan_cache_mode_is_left_as_it_is(api: Api, app_engine: AsyncEngine) -> None:
    """Where the operator chose how prepared statements are planned, neither the listing nor an HNSW scan
    changes it."""
    tenant = TenantId(api.tenant_id)
    await _remember_all(api, FILLER[:3])
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        await session.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))
        store, index = Store(session, tenant, "test"), TermIndex()
        assert await store.keywords.text_half(index, _query(tenant, "garden library"), 3, READ) is not None
        assert await _plans(session) == "force_custom_plan"
        await use_hnsw_scan(session, 40)
        assert await _plans(session) == "force_custom_plan"


async def _recall(
    engine: AsyncEngine,
    tenant: TenantId,
    settings: Settings,
    query: str,
    clock: FrozenClock,
    terms: TermIndex,
) -> Any:
    async with async_sessionmaker(engine)() as session, session.begin():
        await set_tenant(session, tenant)
        service = memory_service(session, tenant, HashEmbedder(), settings=settings, clock=clock, terms=terms)
        result: RecallResult = await service.recall(RecallInput(user_id=USER, query=query, token_budget=400))
        await session.rollback()  # its reinforcement too
        return (
            result.context,
            [(m.memory.id, m.score, m.relevance, m.components, m.passage, m.tokens) for m in result.memories],
            [(s.id, s.reason, s.score) for s in result.skipped],
        )


async def test_a_recall_through_the_index_is_the_statements_recall(api: Api, app_engine: AsyncEngine) -> None:
    tenant = TenantId(api.tenant_id)
    await api.remember(user_id=USER, content=long_text(), type="episodic")
    await _remember_all(api, [*FILLER, NEEDLE.replace("basement", "garage")])
    indexed, statement, index = Settings(), Settings(term_index_max_rows=0), TermIndex()
    for i, query in enumerate(QUERIES):
        clock = FrozenClock(SystemClock().now())
        with statements_sent(app_engine) as sent:
            through_index = await _recall(app_engine, tenant, indexed, query, clock, index)
        # A scope's first recall is the statement's (a scope recalled once is not worth reading).
        assert any(LISTING in s for s in sent) is (i > 0)
        assert any("unit_scored" in s for s in sent) is (i == 0)  # the text half in SQL
        assert through_index == await _recall(app_engine, tenant, statement, query, clock, TermIndex())


async def test_a_scope_is_read_a_bounded_piece_at_a_time(api: Api, app_engine: AsyncEngine) -> None:
    """Rows not indexed yet are read up to a budget of content tokens a recall; until all are read, the
    statement answers, and then the index gives what the statement gives."""
    tenant = TenantId(api.tenant_id)
    await _remember_all(api, FILLER)  # ~20 tokens each
    index, words = TermIndex(), "garden library train podcast"
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        store, query = Store(session, tenant, "test"), _query(tenant, words)
        pieces = 0
        while await store.keywords.text_half(index, query, 5000, 40) is None:
            pieces += 1
            assert pieces < len(FILLER)
        assert 2 <= pieces < len(FILLER)  # a couple of rows a recall
        assert index.units == len(FILLER)
        await _both(session, tenant, index, words)


@pytest.fixture
async def spare(database: TestDatabase) -> AsyncIterator[HeldSpare]:
    reads = HeldSpare(database.app_url, 2)
    yield reads
    await reads.dispose()


async def _apart(
    engine: AsyncEngine, tenant: TenantId, index: TermIndex, spare: SpareReads, words: str
) -> None:
    """A text half that finds rows not indexed yet: the statement's to answer, their reading started apart
    (not on the request's connection)."""
    async with async_sessionmaker(engine)() as session, session.begin():
        await set_tenant(session, tenant)
        query = _query(tenant, words)
        with statements_sent(engine) as sent:
            assert (
                await Store(session, tenant, "test").keywords.text_half(index, query, 5000, 40, spare) is None
            )
        assert any(LISTING in s for s in sent)
        assert not any(TERMS in s for s in sent)
        assert index.reading(query.scope)


async def test_a_scope_is_read_apart_from_the_recall_on_a_spare_connection(
    api: Api, app_engine: AsyncEngine, spare: HeldSpare
) -> None:
    """With a spare connection free, the rows not indexed yet are read there, every one of them a piece of
    the budget at a time, while the recall that found them is answered by the statement; once read, the
    index gives what the statement gives."""
    tenant = TenantId(api.tenant_id)
    await _remember_all(api, FILLER)  # ~20 tokens each: a couple of rows a piece of 40
    index, words = TermIndex(), "garden library train podcast"
    await _apart(app_engine, tenant, index, spare, words)
    await _apart(app_engine, tenant, index, spare, words)  # one read a scope: the next recall waits for it
    assert spare.started == 1
    spare.released.set()
    await index.settled()
    assert not index.reading(_query(tenant, words).scope)
    assert index.units == len(FILLER)  # each row read once
    await _check(app_engine, tenant, index, words)


async def test_tenants_read_apart_into_one_index_see_only_their_rows(
    api: Api, other_api: Api, app_engine: AsyncEngine, spare: HeldSpare
) -> None:
    index, words = TermIndex(), "garden library zeppelin hangar"
    await _remember_all(api, FILLER)
    await _remember_all(other_api, ["The zeppelin hangar opens at dawn"])
    tenants = [TenantId(api.tenant_id), TenantId(other_api.tenant_id)]
    for tenant in tenants:  # both read at once, each on a spare connection of its own
        await _apart(app_engine, tenant, index, spare, words)
    spare.released.set()
    await index.settled()
    mine, theirs = [await _check(app_engine, tenant, index, words) for tenant in tenants]
    assert (mine.stats.rows, theirs.stats.rows) == (len(FILLER), 1)
    assert not set(mine.ranks) & set(theirs.ranks)


async def test_after_a_write_the_rows_are_read_in_the_transaction_that_sees_them(
    api: Api, app_engine: AsyncEngine, spare: HeldSpare
) -> None:
    """A spare connection cannot see what the request's transaction wrote: the recall reads its piece."""
    tenant = TenantId(api.tenant_id)
    index = TermIndex()
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        await memory_service(session, tenant, HashEmbedder()).remember(
            RememberInput(user_id=USER, content=FILLER[2])
        )
        half = await Store(session, tenant, "test").keywords.text_half(
            index, _query(tenant, "library"), 5000, READ, spare
        )
        assert half is not None
        assert len(half.ranks) == 1
        assert not index.reading(_query(tenant, "library").scope)
        await session.rollback()


async def test_a_passage_counts_only_where_its_memory_matches(api: Api, app_engine: AsyncEngine) -> None:
    """PostgreSQL's parser skips a `<script>` element's body, so a passage cut inside one holds words its
    memory's whole text does not: the statement's text half never looks at the passages of a memory that
    does not match, and neither does the index."""
    tenant = TenantId(api.tenant_id)
    script = "<script> " + " ".join(f"Zeppelin hangar note {i}." for i in range(60)) + " </script>"
    stored = await api.remember(user_id=USER, content=f"{FILLER[0]} {script} {FILLER[1]}", type="episodic")
    await _remember_all(api, ["The zeppelin hangar opens at dawn"])
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        passages = await session.execute(
            text("SELECT count(*) FROM memory_passages WHERE memory_id = :id AND content_tsv @@ 'zeppelin'"),
            {"id": stored["memory"]["id"]},
        )
        assert passages.scalar_one() > 0  # the words are in its passages, not in its whole text
        half = await _both(session, tenant, TermIndex(), "zeppelin hangar")
    assert uuid.UUID(stored["memory"]["id"]) not in half.ranks
    assert len(half.ranks) == 1


class WaitsForTheListing(EmbedderWrapper):
    """Answers only once the scope's listing has been sent (or after 5 s: a recall that lists nothing
    while embedding fails the test by its assertion, not by hanging)."""

    def __init__(self, sent: asyncio.Event) -> None:
        super().__init__(HashEmbedder())
        self.sent = sent
        self.listed_first = False  # whether the listing was sent before the vector was given

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.sent.wait(), timeout=5)
        self.listed_first = self.sent.is_set()
        return await self.inner.embed(texts)


async def test_the_listing_is_read_while_the_query_is_embedded(api: Api, app_engine: AsyncEngine) -> None:
    tenant = TenantId(api.tenant_id)
    await _remember_all(api, FILLER[:3])
    sent = asyncio.Event()

    def listing(statement: str) -> None:
        if LISTING in statement:
            sent.set()

    model = WaitsForTheListing(sent)
    index = TermIndex()
    index.wanted(Scope(tenant, USER, None, Reach.WITH_GLOBAL))  # recalled before: worth indexing
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        with statements_sent(app_engine, each=listing):
            result = await memory_service(session, tenant, model, terms=index).recall(
                RecallInput(user_id=USER, query="Which evenings does the library keep late hours?")
            )
    assert model.listed_first
    assert "library" in result.context
