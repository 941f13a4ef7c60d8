"""Dreaming through HTTP with the offline dreamer: propose -> approve -> apply, and nothing changes
without an approval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.clock import FrozenClock
from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client
from tests.support.tables import table_rows

COFFEE = "I drink coffee every morning"
COFFEE_AGAIN = "Every morning I drink coffee"


async def duplicates(api: Api, user: str = "u") -> tuple[dict[str, Any], dict[str, Any]]:
    """Two live memories saying the same in different slots (the write path keeps both)."""
    a = await api.remember(user_id=user, content=COFFEE, type="preference", subject="coffee")
    b = await api.remember(user_id=user, content=COFFEE_AGAIN, type="preference", subject="morning routine")
    assert (a["action"], b["action"]) == ("created", "created")
    return a["memory"], b["memory"]


async def dream(api: Api, **body: Any) -> dict[str, Any]:
    response = await api.post("/v1/dream", {"user_id": "u", **body})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def decide(api: Api, proposal_id: str, verb: str) -> dict[str, Any]:
    response = await api.post(f"/v1/dream/proposals/{proposal_id}/{verb}")
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def apply(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post("/v1/dream/apply", body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def merge_of(result: dict[str, Any], *ids: str) -> dict[str, Any]:
    [found] = [p for p in result["proposals"] if p["kind"] == "merge" and set(p["target_ids"]) == set(ids)]
    return found


async def test_offline_dream_proposes_a_merge_and_nothing_changes_without_an_approval(
    api: Api, owner_engine: AsyncEngine
) -> None:
    a, b = await duplicates(api)
    await api.remember(user_id="u", content="My sister lives in Lisbon", type="fact")
    before = await table_rows(owner_engine, "memories", api.tenant_id)

    result = await dream(api)
    assert result["mode"] == "offline"
    merge = merge_of(result, a["id"], b["id"])
    assert merge["status"] == "proposed"
    assert merge["payload"]["fingerprint"].keys() == {a["id"], b["id"]}
    assert (await dream(api))["created"] == 0  # the same proposal is not made twice

    rejected = (await dream(api, user_id="u"))["proposals"]
    for proposal in rejected:
        await decide(api, proposal["id"], "reject")
    report = await apply(api, {"user_id": "u"})
    assert (report["applied"], report["merged"], report["stale"]) == (0, 0, 0)
    again = await dream(api)
    assert (again["created"], again["proposals"]) == (0, [])  # a rejected proposal does not come back
    assert await table_rows(owner_engine, "memories", api.tenant_id) == before


async def test_an_approved_merge_is_recalled_in_place_of_its_duplicates(api: Api) -> None:
    a, b = await duplicates(api)
    merge = merge_of(await dream(api), a["id"], b["id"])
    approved = await decide(api, merge["id"], "approve")
    assert (approved["status"], approved["decided_at"] is not None) == ("approved", True)

    report = await apply(api, {"proposal_ids": [merge["id"]]})
    assert (report["applied"], report["merged"], report["superseded"], report["stale"]) == (1, 1, 0, 0)
    merged_id = report["results"][0]["memory_id"]
    merged = (await api.get(f"/v1/memories/{merged_id}")).json()
    assert (merged["source"], merged["content"], merged["status"]) == ("dream", COFFEE_AGAIN, "active")

    recall = await api.recall(user_id="u", query="coffee in the morning")
    assert [m["memory"]["id"] for m in recall["memories"]] == [merged_id]
    for old in (a, b):
        got = (await api.get(f"/v1/memories/{old['id']}")).json()
        assert (got["status"], got["superseded_by"]) == ("superseded", merged_id)
        history = (await api.get(f"/v1/memories/{old['id']}/history")).json()
        assert merged_id in [v["id"] for v in history["versions"]]
        [event] = [e for e in history["events"] if e["kind"] == "superseded" and e["memory_id"] == old["id"]]
        assert event["details"]["successor"] == merged_id
        assert event["details"]["rule"] == "approved_proposal"
        assert event["details"]["proposal_id"] == merge["id"]
    events = (await api.get(f"/v1/memories/{merged_id}/history")).json()["events"]
    [provenance] = [e for e in events if e["kind"] == "merged"]
    assert sorted(provenance["details"]["merged_ids"]) == sorted([a["id"], b["id"]])
    applied = (await api.get("/v1/dream/proposals", user_id="u", status="applied")).json()["items"]
    assert [p["id"] for p in applied] == [merge["id"]]
    assert applied[0]["applied_at"] is not None
    assert (await api.post(f"/v1/dream/proposals/{merge['id']}/reject")).status_code == 409


async def test_a_target_changed_after_approval_makes_the_proposal_stale_and_nothing_of_it_is_applied(
    api: Api, owner_engine: AsyncEngine
) -> None:
    a, b = await duplicates(api)
    merge = merge_of(await dream(api), a["id"], b["id"])
    await decide(api, merge["id"], "approve")
    assert (await api.patch(f"/v1/memories/{b['id']}", {"importance": 0.9})).status_code == 200
    before = await table_rows(owner_engine, "memories", api.tenant_id)

    report = await apply(api, {"user_id": "u"})
    assert (report["applied"], report["merged"], report["stale"]) == (0, 0, 1)
    assert report["results"][0]["status"] == "stale"
    assert "changed" in report["results"][0]["reason"]
    assert await table_rows(owner_engine, "memories", api.tenant_id) == before
    [stale] = (await api.get("/v1/dream/proposals", user_id="u", status="stale")).json()["items"]
    assert stale["id"] == merge["id"]
    assert (await api.post(f"/v1/dream/proposals/{merge['id']}/approve")).status_code == 409


async def test_recall_does_not_make_an_approved_proposal_stale(api: Api) -> None:
    a, b = await duplicates(api)
    merge = merge_of(await dream(api), a["id"], b["id"])
    await decide(api, merge["id"], "approve")
    await api.recall(user_id="u", query="coffee every morning")  # reinforces both: access stats only
    assert (await apply(api, {"user_id": "u"}))["merged"] == 1


async def test_approved_write_path_proposal_supersedes_a_pinned_memory_with_rule_and_successor(
    api: Api,
) -> None:
    pinned = (await api.remember(user_id="u", content="Timezone is CET", subject="timezone", pinned=True))[
        "memory"
    ]
    later = await api.remember(user_id="u", content="Timezone is PST", subject="timezone")
    [proposal_id] = later["proposals"]
    queue = (await dream(api))["proposals"]
    assert proposal_id in [p["id"] for p in queue]  # the dream keeps the write path's proposals
    await decide(api, proposal_id, "approve")

    report = await apply(api, {"user_id": "u"})
    assert (report["applied"], report["superseded"]) == (1, 1)
    old = (await api.get(f"/v1/memories/{pinned['id']}")).json()
    assert (old["status"], old["superseded_by"]) == ("superseded", later["memory"]["id"])
    assert old["valid_to"] is not None
    history = (await api.get(f"/v1/memories/{pinned['id']}/history")).json()
    [event] = [e for e in history["events"] if e["kind"] == "superseded"]
    assert event["details"]["successor"] == later["memory"]["id"]
    assert event["details"]["rule"] == "approved_proposal"
    assert event["details"]["proposed_rule"] == "exact_slot"
    timeline = (await api.get("/v1/timeline", user_id="u")).json()["items"]
    assert timeline[0]["kind"] == "superseded"
    assert timeline[0]["details"]["successor"] == later["memory"]["id"]


async def test_decayed_unimportant_memory_is_proposed_for_forgetting_and_forgotten_once_approved(
    settings: Settings, new_tenant: NewTenant
) -> None:
    clock = FrozenClock(datetime(2026, 11, 30, 12, tzinfo=UTC))
    tenant_id, key = await new_tenant()
    async with running_client(settings, clock) as client:
        api = Api(client, key, tenant_id)
        trivia = (
            await api.remember(user_id="u", content="Had pasta for lunch", type="episodic", importance=0.1)
        )["memory"]
        keep = (
            await api.remember(user_id="u", content="Prefers window seats", type="preference", importance=0.1)
        )["memory"]
        assert [p for p in (await dream(api))["proposals"] if p["kind"] == "forget"] == []
        clock.advance(timedelta(days=200))
        forgets = [p for p in (await dream(api))["proposals"] if p["kind"] == "forget"]
        assert [p["target_ids"] for p in forgets] == [[trivia["id"]]]
        await decide(api, forgets[0]["id"], "approve")
        report = await apply(api, {"user_id": "u"})
        assert (report["applied"], report["forgotten"]) == (1, 1)
        assert (await api.get(f"/v1/memories/{trivia['id']}")).json()["status"] == "forgotten"
        assert (await api.get(f"/v1/memories/{keep['id']}")).json()["status"] == "active"


async def test_timeline_shows_supersession_with_successor_and_rule_newest_first_and_pages(api: Api) -> None:
    first = (await api.remember(user_id="u", content="Editor is vim", subject="editor", type="preference"))[
        "memory"
    ]
    second = (
        await api.remember(user_id="u", content="Editor is helix", subject="editor", type="preference")
    )["memory"]
    stale = (await api.remember(user_id="u", content="The staging database runs on a small instance"))[
        "memory"
    ]
    fresh = (await api.remember(user_id="u", content="The staging database runs on a small instance now"))[
        "memory"
    ]
    items = (await api.get("/v1/timeline", user_id="u")).json()["items"]
    superseded = {e["memory_id"]: e for e in items if e["kind"] == "superseded"}
    assert superseded[first["id"]]["details"]["successor"] == second["id"]
    assert superseded[first["id"]]["details"]["rule"] == "exact_slot"
    assert superseded[stale["id"]]["details"]["successor"] == fresh["id"]
    assert superseded[stale["id"]]["details"]["rule"] == "semantic_cosine"
    assert superseded[stale["id"]]["details"]["cosine"] >= 0.9
    assert [e["id"] for e in items] == sorted((e["id"] for e in items), reverse=True)

    history = (await api.get(f"/v1/memories/{first['id']}/history")).json()
    [event] = [e for e in history["events"] if e["kind"] == "superseded"]
    assert (event["details"]["successor"], event["details"]["rule"]) == (second["id"], "exact_slot")

    seen: list[int] = []
    cursor = None
    while True:
        page = (
            await api.get("/v1/timeline", user_id="u", limit=2, **({"cursor": cursor} if cursor else {}))
        ).json()
        seen += [e["id"] for e in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [e["id"] for e in items]
