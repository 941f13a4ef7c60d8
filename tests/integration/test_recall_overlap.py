"""Recall reads its scope's plan and BM25's statistics while the query is embedded, and an embedding
error still ends the recall as that error, with nothing left reading on the request's session."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from dataclasses import replace

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.session import set_tenant
from app.embeddings import EmbeddingError, HashEmbedder
from app.embeddings.base import EmbedderWrapper
from app.lib.settings import Settings
from app.memory.models import RecallInput
from app.memory.service import MemoryService
from app.store.bm25 import TextStats
from app.store.plan import ScopeSizes
from app.tenancy.types import TenantId
from tests.conftest import Api
from tests.support.contexts import memory_service
from tests.support.statements import statements_sent

# The statement that counts BM25's statistics over a scope (`Shape.text_stats`).
STATS_MARK = "plain AS MATERIALIZED"


class WaitsForTheStatistics(EmbedderWrapper):
    """Answers only once the statistics' statement has been sent: a recall that embeds first and
    reads after never gets its vector (the wait times out)."""

    def __init__(self, sent: asyncio.Event) -> None:
        super().__init__(HashEmbedder())
        self.sent = sent

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        await asyncio.wait_for(self.sent.wait(), timeout=5)
        return await self.inner.embed(texts)


class FailsAfterAWhile(EmbedderWrapper):
    """Fails as a provider does, after the statistics' statement has had time to start."""

    def __init__(self) -> None:
        super().__init__(HashEmbedder())

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        raise EmbeddingError("the embedding provider is unavailable")


def service(session: AsyncSession, tenant: TenantId, embedder: EmbedderWrapper) -> MemoryService:
    # Nothing remembered: counted now.
    return memory_service(
        session, tenant, embedder, settings=Settings(term_index_max_rows=0), counted_now=True
    )


async def test_the_statistics_are_read_while_the_query_is_embedded(api: Api, app_engine: AsyncEngine) -> None:
    tenant = TenantId(api.tenant_id)
    for fact in ("The build runs on Fridays", "Our VPN is WireGuard"):
        await api.remember(user_id="u", content=fact)
    sent = asyncio.Event()

    def stats_sent(statement: str) -> None:
        if STATS_MARK in statement:
            sent.set()

    with statements_sent(app_engine, each=stats_sent):
        async with async_sessionmaker(app_engine)() as session, session.begin():
            await set_tenant(session, tenant)
            result = await service(session, tenant, WaitsForTheStatistics(sent)).recall(
                RecallInput(user_id="u", query="when does the build run?")
            )
    assert sent.is_set()
    assert "The build runs on Fridays" in result.context
    assert set(result.latency_ms) >= {"embed", "sql", "score", "pack", "total"}


async def test_an_embedding_error_ends_the_recall_as_itself_with_the_session_free(
    api: Api, app_engine: AsyncEngine
) -> None:
    tenant = TenantId(api.tenant_id)
    await api.remember(user_id="u", content="The build runs on Fridays")
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        with statements_sent(app_engine) as seen:
            with pytest.raises(EmbeddingError, match="unavailable"):
                await service(session, tenant, FailsAfterAWhile()).recall(
                    RecallInput(user_id="u", query="when does the build run?")
                )
            assert any(STATS_MARK in s for s in seen)  # the statistics were being read when it failed
        # Their read has ended with the recall: nothing is left running on the session it is closing.
        still_reading = [t for t in asyncio.all_tasks() if not t.done() and "_plan" in repr(t.get_coro())]
        assert still_reading == []
        assert (await session.execute(text("SELECT count(*) FROM memories"))).scalar_one() == 1


class PlanFails(ScopeSizes):
    """The scope's plan read fails (as a dropped connection would) once the statistics were sent."""

    async def plan_with_stats(self, *args: object, **kwargs: object) -> tuple[bool, int, TextStats]:
        await asyncio.sleep(0)
        raise ConnectionError("the database went away")


async def test_when_both_fail_the_embedding_error_is_raised_and_the_plan_error_not_left_unread(
    api: Api, app_engine: AsyncEngine
) -> None:
    tenant = TenantId(api.tenant_id)
    await api.remember(user_id="u", content="The build runs on Fridays")
    unread: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unread.append(context))
    try:
        async with async_sessionmaker(app_engine)() as session, session.begin():
            await set_tenant(session, tenant)
            ctx = service(session, tenant, FailsAfterAWhile()).ctx
            with pytest.raises(EmbeddingError, match="unavailable"):
                await MemoryService(replace(ctx, scope_sizes=PlanFails())).recall(
                    RecallInput(user_id="u", query="when does the build run?")
                )
        gc.collect()  # a task whose exception nobody read reports it when it is collected
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(before)
    assert [c.get("message") for c in unread] == []
