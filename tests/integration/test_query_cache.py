"""A repeated recall costs no embedding: the service's query cache, counted through a real embedder."""

from __future__ import annotations

from collections.abc import Sequence

from litestar.testing import AsyncTestClient

from app.embeddings import HashEmbedder
from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import Api, NewTenant


class CountingEmbedder(HashEmbedder):
    """The hash embedder, remembering every call's texts."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return await super().embed(texts)


async def test_a_second_identical_recall_does_not_call_the_embedder(
    settings: Settings, new_tenant: NewTenant
) -> None:
    embedder = CountingEmbedder()
    async with AsyncTestClient(app=create_app(settings, embedder=embedder)) as client:
        tenant_id, key = await new_tenant()
        api = Api(client, key, tenant_id)
        await api.remember(user_id="u", content="The deploy target is AWS eu-west-1")
        query = "which region do we deploy to"
        first = await api.recall(user_id="u", query=query)
        calls = len(embedder.calls)
        second = await api.recall(user_id="u", query=query)
        assert len(embedder.calls) == calls  # the model was not called again
        assert [m["memory"]["id"] for m in second["memories"]] == [
            m["memory"]["id"] for m in first["memories"]
        ]
        assert first["memories"], "the remembered fact is recalled both times"
        await api.recall(user_id="u", query=query + " now")
        assert embedder.calls[-1] == [query + " now"]


async def test_the_cache_shares_vectors_never_results_across_tenants(
    settings: Settings, new_tenant: NewTenant
) -> None:
    embedder = CountingEmbedder()
    async with AsyncTestClient(app=create_app(settings, embedder=embedder)) as client:
        mine, theirs = [Api(client, key, tenant) for tenant, key in [await new_tenant(), await new_tenant()]]
        await mine.remember(user_id="u", content="Our staging database password rotates every Monday")
        query = "when does the staging database password rotate"
        assert (await mine.recall(user_id="u", query=query))["memories"]
        calls = len(embedder.calls)
        other = await theirs.recall(user_id="u", query=query)  # the same text from another tenant
        assert len(embedder.calls) == calls  # its vector came from the cache...
        assert other["memories"] == []  # ...but nothing of the first tenant's
        assert "Monday" not in other["context"]


async def test_the_cache_can_be_turned_off(settings: Settings, new_tenant: NewTenant) -> None:
    embedder = CountingEmbedder()
    off = settings.model_copy(update={"query_cache_size": 0})
    async with AsyncTestClient(app=create_app(off, embedder=embedder)) as client:
        tenant_id, key = await new_tenant()
        api = Api(client, key, tenant_id)
        for _ in range(2):
            await api.recall(user_id="u", query="anything at all")
        assert embedder.calls == [["anything at all"], ["anything at all"]]
