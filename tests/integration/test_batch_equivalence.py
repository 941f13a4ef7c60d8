"""A batch decides exactly as the same items written one by one (the batch path prefetches its lookups)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client

SEED: list[dict[str, Any]] = [
    {"content": "I prefer dark mode", "type": "preference", "subject": "theme"},
    {"content": "The deploy target is Fly.io", "type": "fact"},
    {"content": "Never deploy on Fridays", "type": "critical_rule", "subject": "deploys"},
    {"content": "I use vim", "type": "preference", "subject": "editor"},
    {"content": "The office plant is a fern", "type": "fact", "subject": "office plant"},
]
LAST_YEAR = (datetime.now(UTC) - timedelta(days=365)).isoformat()
ITEMS: list[dict[str, Any]] = [
    {"content": "I prefer light mode", "type": "preference", "subject": "theme"},  # supersedes a stored row
    {
        "content": "I prefer solarized",
        "type": "preference",
        "subject": "theme",
    },  # supersedes the previous item
    {"content": "The deploy target is Fly.io", "type": "fact"},  # duplicate of a stored row
    {"content": "Lunch is at noon on weekdays", "type": "fact"},
    {"content": "lunch is at noon on weekdays.", "type": "fact"},  # duplicate of the previous item
    {"content": "The deploy target is Fly.io now", "type": "fact"},  # near-identical: semantic rule
    {"content": "Deploy any day", "type": "critical_rule", "subject": "deploys"},  # protected: a proposal
    {"content": "I use emacs", "type": "preference", "subject": "editor", "observed_at": LAST_YEAR},  # stale
    {"content": "The office plant is a fern indeed", "type": "fact"},  # retires the slotted fern
    {"content": "The office plant is a cactus", "type": "fact", "subject": "office plant"},
    {"content": "Our VPN is WireGuard", "type": "fact"},
    {"content": "Our VPN is WireGuard", "type": "decision"},  # same text, another type: not a duplicate
]


async def store(api: Api, user: str) -> list[tuple[str, str, str | None, str]]:
    page = (await api.get("/v1/memories", user_id=user, limit=200)).json()
    return sorted((m["content"], m["type"], m["subject"], m["status"]) for m in page["items"])


def outcome(result: dict[str, Any]) -> tuple[str, int, int]:
    return result["action"], len(result["superseded"]), len(result["proposals"])


async def test_a_batch_decides_as_the_same_items_one_by_one(api: Api) -> None:
    for user in ("one-by-one", "batch"):
        for seed in SEED:
            await api.remember(user_id=user, **seed)

    one_by_one = [outcome(await api.remember(user_id="one-by-one", **item)) for item in ITEMS]
    response = await api.post("/v1/memories/batch", {"items": [{"user_id": "batch", **i} for i in ITEMS]})
    assert response.status_code == 201, response.text
    batched = [outcome(r) for r in response.json()["results"]]

    assert batched == one_by_one
    assert await store(api, "batch") == await store(api, "one-by-one")
    # The cases above are really exercised (not all "created").
    actions = {action for action, _, _ in batched}
    assert {"created", "superseded", "deduplicated"} <= actions
    assert any(proposals for _, _, proposals in batched)


async def test_a_batch_spanning_users_and_projects_keeps_them_apart(api: Api) -> None:
    items = [
        {"user_id": "a", "content": "I prefer tea", "type": "preference", "subject": "drink"},
        {"user_id": "b", "content": "I prefer coffee", "type": "preference", "subject": "drink"},
        {
            "user_id": "a",
            "project_id": "p",
            "content": "I prefer water",
            "type": "preference",
            "subject": "drink",
        },
        {"user_id": "a", "content": "I prefer juice", "type": "preference", "subject": "drink"},
    ]
    results = (await api.post("/v1/memories/batch", {"items": items})).json()["results"]
    assert [r["action"] for r in results] == ["created", "created", "created", "superseded"]
    assert results[3]["superseded"] == [results[0]["memory"]["id"]]


async def test_large_scopes_decide_the_same_through_the_index(
    settings: Settings, new_tenant: NewTenant
) -> None:
    # Forced on a tiny scope: past write_exact_scan_max_rows the nearest-memory check uses HNSW.
    forced = settings.model_copy(update={"write_exact_scan_max_rows": 2, "hnsw_min_share": 0.0})
    tenant_id, key = await new_tenant()
    async with running_client(forced) as client:
        api = Api(client, key, tenant_id)
        for user in ("one-by-one", "batch"):
            for seed in SEED:
                await api.remember(user_id=user, **seed)
        one_by_one = [outcome(await api.remember(user_id="one-by-one", **item)) for item in ITEMS]
        body = {"items": [{"user_id": "batch", **i} for i in ITEMS]}
        batched = [outcome(r) for r in (await api.post("/v1/memories/batch", body)).json()["results"]]
        assert batched == one_by_one
        assert ("superseded", 1, 0) in batched
        assert await store(api, "batch") == await store(api, "one-by-one")
