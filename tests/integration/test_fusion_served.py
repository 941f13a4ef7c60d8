"""The served app fuses with the embedder's fusion, and `minmax` scales cosines from the embedder's floor:
what a recall's trace reports, through the real app and PostgreSQL."""

from __future__ import annotations

import pytest
from litestar.testing import AsyncTestClient

from app.embeddings import HashEmbedder
from app.lib.ranking import Fusion
from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import Api, NewTenant


class MinmaxHashEmbedder(HashEmbedder):
    """The hash embedder, declaring `minmax` as a sentence model does (its floor stays 0.12)."""

    @property
    def fusion(self) -> Fusion:
        return Fusion.MINMAX


FACTS = [
    "The deploy target is AWS eu-west-1 for the staging cluster",
    "The staging cluster deploys every Tuesday",
    "The staging cluster has four nodes",
]
QUERY = "where does the staging cluster deploy"


async def _components(settings: Settings, new_tenant: NewTenant, embedder: HashEmbedder) -> list[dict]:
    async with AsyncTestClient(app=create_app(settings, embedder=embedder)) as client:
        tenant_id, key = await new_tenant()
        api = Api(client, key, tenant_id)
        for fact in FACTS:
            await api.remember(user_id="u", content=fact)
        recalled = await api.recall(user_id="u", query=QUERY, min_relevance=0.0)
        return [m["components"] for m in recalled["memories"]]


async def test_minmax_scales_each_cosine_between_the_floor_or_lowest_and_the_best(
    settings: Settings, new_tenant: NewTenant
) -> None:
    components = await _components(settings, new_tenant, MinmaxHashEmbedder())
    cosines = [c["cosine"] for c in components]
    assert len(set(cosines)) == 3
    # Every memory is about the query (above the hash embedder's floor, 0.12), so the floor, not the
    # lowest of them, is where the scale starts: the lowest keeps a share above 0.
    assert min(cosines) > 0.12
    low, high = 0.12, max(cosines)
    for c in components:
        assert c["semantic"] == pytest.approx((c["cosine"] - low) / (high - low))
    assert sorted(c["semantic"] for c in components)[0] > 0.0
    assert max(c["semantic"] for c in components) == pytest.approx(1.0)


async def test_the_hash_embedder_keeps_the_raw_cosine(settings: Settings, new_tenant: NewTenant) -> None:
    components = await _components(settings, new_tenant, HashEmbedder())
    assert components
    assert all(c["semantic"] == c["cosine"] for c in components)
