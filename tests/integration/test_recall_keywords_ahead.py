"""Recall reads its text half while the query is still being embedded (a model's milliseconds, a remote
provider's more), then loads those memories beside the cosine half's: the same candidates with the same
BM25 as the one statement gives, and a memory forgotten in between is not loaded."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import set_tenant
from app.embeddings import HashEmbedder
from app.embeddings.base import Embedder, EmbedderWrapper
from app.lib.clock import Clock, FrozenClock, SystemClock
from app.lib.settings import Settings
from app.memory.models import RecallInput, RecallResult
from app.tenancy.types import TenantId
from tests.conftest import Api
from tests.integration.test_passages import FILLER, NEEDLE, QUESTION, long_text
from tests.support.contexts import memory_service
from tests.support.statements import statements_sent

# The statement that reads the text half on its own (`KeywordReads.keyword_scores`).
AHEAD_MARK = "(SELECT array_agg(id) FROM kw) AS top"
USER = "reader"


class SlowModel(EmbedderWrapper):
    """Answers once the text half has been read (or after 5 s: a recall that reads nothing ahead fails the
    test by its result, not by hanging), running `meanwhile` first, as another request would."""

    def __init__(self, read: asyncio.Event, meanwhile: Callable[[], Awaitable[None]] | None = None) -> None:
        super().__init__(HashEmbedder())
        self.read, self.meanwhile = read, meanwhile

    @property
    def remote(self) -> bool:
        return True  # an API: the wait is the network's

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.read.wait(), timeout=5)
        if self.meanwhile is not None:
            await self.meanwhile()
        return await self.inner.embed(texts)


async def recall(
    engine: AsyncEngine, tenant: TenantId, embedder: Embedder, query: str, clock: Clock | None = None
) -> RecallResult:
    async with async_sessionmaker(engine)() as session, session.begin():
        await set_tenant(session, tenant)
        service = memory_service(
            session, tenant, embedder, settings=Settings(term_index_max_rows=0), clock=clock, counted_now=True
        )
        result = await service.recall(RecallInput(user_id=USER, query=query, token_budget=400))
        await session.rollback()  # its reinforcement too: the next recall sees the same salience
        return result


def shown(result: RecallResult) -> list[tuple[Any, ...]]:
    return [
        (m.memory.id, m.memory.status, m.score, m.relevance, m.components, m.passage, m.tokens)
        for m in result.memories
    ]


async def test_the_text_half_read_ahead_gives_the_recall_the_one_statement_gives(
    api: Api, app_engine: AsyncEngine
) -> None:
    tenant = TenantId(api.tenant_id)
    await api.remember(user_id=USER, content=long_text(), type="episodic")  # stored with passages
    for sentence in [*FILLER, NEEDLE.replace("basement", "garage")]:
        await api.remember(user_id=USER, content=sentence, type="episodic")
    questions = (QUESTION, "Which evenings does the library keep late hours?", "tomatoes on the fence")
    for query in (*questions, "xylophone quartz zeppelin"):  # the last matches no word: no text half
        read, clock = asyncio.Event(), FrozenClock(SystemClock().now())  # the same instant for both

        def sent(statement: str, read: asyncio.Event = read) -> None:
            if AHEAD_MARK in statement:
                read.set()

        with statements_sent(app_engine, each=sent) as statements:
            ahead = await recall(app_engine, tenant, SlowModel(read), query, clock)
        assert read.is_set(), "the text half was not read while the query was embedded"
        assert not any("unit_scored" in s for s in statements if AHEAD_MARK not in s)  # read once
        with statements_sent(app_engine) as statements:
            together = await recall(
                app_engine, tenant, HashEmbedder(), query, clock
            )  # instant: one statement
        assert not any(AHEAD_MARK in s for s in statements)
        assert ahead.context == together.context
        assert shown(ahead) == shown(together)
        matched = any(m.components.get("keyword", 0) > 0 for m in ahead.memories)
        assert matched is (query in questions)
        assert [(s.id, s.reason, s.score) for s in ahead.skipped] == [
            (s.id, s.reason, s.score) for s in together.skipped
        ]
        if query == QUESTION:  # the long memory is found by its passage and shown as it
            assert any(m.passage is not None for m in ahead.memories)


async def test_a_memory_forgotten_while_the_query_is_embedded_is_not_recalled(
    api: Api, app_engine: AsyncEngine
) -> None:
    tenant = TenantId(api.tenant_id)
    staging = await api.remember(user_id=USER, content="The staging server runs on port 8443")
    await api.remember(user_id=USER, content="The production server runs on port 443")
    read = asyncio.Event()

    async def forget_staging() -> None:  # another request, committed before the vector arrives
        response = await api.post("/v1/forget", {"user_id": USER, "memory_id": staging["memory"]["id"]})
        assert response.status_code == 200, response.text

    def done(statement: str) -> None:
        if AHEAD_MARK in statement:
            read.set()  # its rows are read: the forget below commits after the text half's snapshot

    with statements_sent(app_engine, each=done, answered=True):
        result = await recall(
            app_engine, tenant, SlowModel(read, forget_staging), "which port does the server run on"
        )
    assert read.is_set()
    recalled = {str(m.memory.id): m.memory.status for m in result.memories}
    assert staging["memory"]["id"] not in recalled
    assert "The production server runs on port 443" in result.context
    assert "8443" not in result.context
