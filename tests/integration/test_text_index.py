"""Recall's text half and its covering index (migration 0006): rows short enough are read from the
index alone, longer rows from the heap, and both are matched by their words."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import set_tenant
from app.embeddings.hashing import HashEmbedder
from app.lib.settings import Settings
from app.store.candidates import CandidateQuery, RecallStore, or_tsquery
from app.tenancy.types import TenantId
from app.vocabulary import Reach, Scope
from tests.conftest import Api, NewTenant, running_client


async def _predicate(owner_engine: AsyncEngine) -> str:
    """The covering index's predicate, as the database stores it."""
    async with owner_engine.connect() as conn:
        query = "SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = 'ix_memories_scope_text'::regclass"
        return str(await conn.scalar(text(query)))


async def _in_covering_index(owner_engine: AsyncEngine, memory_id: str) -> bool:
    predicate = await _predicate(owner_engine)
    async with owner_engine.connect() as conn:
        return bool(
            await conn.scalar(text(f"SELECT {predicate} FROM memories WHERE id = :id"), {"id": memory_id})
        )


async def test_a_memory_too_long_for_the_covering_index_is_still_matched_by_its_words(
    settings: Settings, new_tenant: NewTenant, owner_engine: AsyncEngine
) -> None:
    # Each hyphenated token gives three lexemes: this tsvector is ~16 kB, far past a btree entry.
    long_text = "The zeppelin hangar inventory: " + " ".join(f"a{i}-b{i}" for i in range(400))
    tenant_id, key = await new_tenant()
    async with running_client(settings.model_copy(update={"candidate_k": 2})) as client:
        api = Api(client, key, tenant_id)
        long_id = (await api.remember(user_id="u", content=long_text, type="episodic"))["memory"]["id"]
        short_id = (await api.remember(user_id="u", content="The zeppelin museum opens at nine"))["memory"][
            "id"
        ]
        for filler in ("The cat is called Miso", "Lunch is at noon", "The build runs on Fridays"):
            await api.remember(user_id="u", content=filler)
        result = await api.recall(user_id="u", query="zeppelin", min_relevance=0, token_budget=8192)

    assert not await _in_covering_index(owner_engine, long_id)
    assert await _in_covering_index(owner_engine, short_id)
    keyword = {m["memory"]["id"]: m["components"]["keyword"] for m in result["memories"]}
    # Only the text half gives a keyword score: both rows were matched, one from each index.
    assert keyword[long_id] > 0
    assert keyword[short_id] > 0


async def test_the_text_half_reads_the_covering_index(
    api: Api, app_engine: AsyncEngine, owner_engine: AsyncEngine
) -> None:
    # The statement must repeat the index predicate word for word, or the planner cannot use the
    # index. On a table this small it would rather read everything, so those plans are turned off.
    for i in range(20):
        await api.remember(user_id="u", content=f"Release {i} shipped the kafka consumer fix")
    async with owner_engine.connect() as conn:
        await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(
            text("VACUUM (ANALYZE) memories")
        )
    tenant = TenantId(api.tenant_id)
    embedder = HashEmbedder()
    async with async_sessionmaker(app_engine)() as session, session.begin():
        await set_tenant(session, tenant)
        await session.execute(text("SET LOCAL enable_seqscan = off"))
        await session.execute(text("SET LOCAL enable_bitmapscan = off"))
        query = CandidateQuery(
            Scope(tenant, "u", None, Reach.WITH_GLOBAL),
            embedder.embed_text("kafka consumer"),
            embedder.name,
            or_tsquery("kafka consumer"),
            5,
            datetime.now(UTC),
        )
        rows = await RecallStore(session, tenant).candidates(query, dim=embedder.dim, use_index=False)
        scans = await session.scalar(
            text("SELECT pg_stat_get_xact_numscans('ix_memories_scope_text'::regclass)")
        )
    # Every row matches both words, so every candidate (5 by cosine, 5 by BM25, overlapping) carries
    # its BM25, the cosine half's too.
    assert 5 <= len(rows) <= 10
    assert all(r.keyword_rank > 0 for r in rows)
    assert scans == 1


async def _largest_fitting(owner_engine: AsyncEngine, tokens: list[str], room: int) -> str:
    """The longest prefix of `tokens` (joined) whose tsvector still satisfies the index's size bound."""
    size = text("SELECT octet_length(t::text) + 4 * length(t) FROM to_tsvector('english', :s) t")
    async with owner_engine.connect() as conn:
        low, high = 1, len(tokens)
        while low < high:
            middle = (low + high + 1) // 2
            if await conn.scalar(size, {"s": " " + " ".join(tokens[:middle])}) <= room:
                low = middle
            else:
                high = middle - 1
    return " ".join(tokens[:low])


async def test_the_largest_rows_the_covering_index_takes_can_be_written(
    api: Api, owner_engine: AsyncEngine
) -> None:
    # A btree entry over 2,704 bytes is an error on insert, so the predicate must keep out every row
    # whose entry could be that large: multibyte ids at their length limit, incompressible words.
    bound = int(re.findall(r"<= (\d+)", await _predicate(owner_engine))[-1])
    wide_id = "\U0001f600" * 200  # 800 bytes
    hexes = [uuid.UUID(int=i * 7919 + 1).hex for i in range(600)]
    cases = [
        (wide_id, wide_id, await _largest_fitting(owner_engine, hexes, bound - 2 * 800)),
        ("u", None, await _largest_fitting(owner_engine, hexes, bound - 1)),
        ("u", None, await _largest_fitting(owner_engine, [f"x{i}-y{i}" for i in range(1200)], bound - 1)),
    ]
    for user_id, project_id, content in cases:
        created = await api.remember(user_id=user_id, project_id=project_id, content=content)
        assert await _in_covering_index(owner_engine, created["memory"]["id"])
