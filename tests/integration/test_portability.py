"""Export and import over HTTP: a lossless round trip through an erase, dedupe, id remapping, slot
resolution, Markdown, tenant isolation and bad documents (422, nothing written)."""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.lib.clock import FrozenClock
from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client

USER = "alice"
OTHER = "bob"


@pytest.fixture
async def frozen(settings: Settings, new_tenant: NewTenant) -> AsyncIterator[tuple[Api, FrozenClock]]:
    """A tenant on an app whose clock moves only when told: recall scores are exactly reproducible."""
    tenant_id, key = await new_tenant()
    clock = FrozenClock(datetime(2026, 6, 1, 12, tzinfo=UTC))
    async with running_client(settings, clock=clock) as client:
        yield Api(client, key, tenant_id), clock


async def export(api: Api, **params: Any) -> dict[str, Any]:
    response = await api.get("/v1/export", **params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


async def import_(api: Api, document: Any) -> dict[str, Any]:
    response = await api.post("/v1/import", document)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def seed_history(api: Api, clock: FrozenClock) -> dict[str, str]:
    """A user with every status, a supersession chain, a proposal, a project, privacy levels, a patch."""
    ids: dict[str, str] = {}

    async def add(name: str, **body: Any) -> dict[str, Any]:
        clock.advance(timedelta(minutes=1))  # distinct times: the slot veto never meets a tie
        result = await api.remember(**body)
        ids[name] = result["memory"]["id"]
        return result

    await add("react", user_id=USER, content="Use React for the frontend", type="decision", subject="ui")
    await add(
        "next", user_id=USER, content="We switched the frontend to Next.js", type="decision", subject="ui"
    )
    await add("rule", user_id=USER, content="Never deploy on Fridays", type="critical_rule", subject="deploy")
    proposed = await add(
        "proposed", user_id=USER, content="Deploy any day", type="critical_rule", subject="deploy"
    )
    assert proposed["proposals"], proposed
    await add("pinned", user_id=USER, content="My name is Alice Lindqvist", type="identity", pinned=True)
    await add("archived", user_id=USER, content="Old hobby: stamp collecting")
    assert (await api.post(f"/v1/memories/{ids['archived']}/archive")).status_code == 200
    await add("forgotten", user_id=USER, content="Lived in Tromso in 2019")
    forget = await api.post("/v1/forget", {"user_id": USER, "memory_id": ids["forgotten"]})
    assert forget.status_code == 200
    await add("private", user_id=USER, content="Salary is negotiated every March", privacy="private")
    await add("sensitive", user_id=USER, content="Takes medication for migraines", privacy="sensitive")
    await add("project", user_id=USER, content="Billing uses Kafka", project_id="billing", tags=["infra"])
    patched = await api.patch(f"/v1/memories/{ids['project']}", {"importance": 0.9})
    assert patched.status_code == 200
    await api.remember(user_id=OTHER, content="Bob prefers tea over coffee", type="preference")
    return ids


def without_import_events(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "id"} for e in document["events"] if e["kind"] != "imported"]


def as_imported(events: list[dict[str, Any]], importer: str) -> list[dict[str, Any]]:
    """An imported event is recorded under the importer, with the actor the document claimed in its details."""
    return [
        {**e, "actor": importer, "details": {"original_actor": e["actor"], **e["details"]}} for e in events
    ]


async def test_export_erase_import_export_is_lossless_and_recall_is_unchanged(
    frozen: tuple[Api, FrozenClock],
) -> None:
    api, clock = frozen
    ids = await seed_history(api, clock)
    query = {"user_id": USER, "query": "frontend ui deploy name salary", "min_relevance": 0}
    before = await api.recall(**query)
    assert "Next.js" in before["context"]
    first = await export(api, user_id=USER)
    statuses = {m["id"]: m["status"] for m in first["memories"]}
    assert statuses[ids["react"]] == "superseded"
    assert statuses[ids["pinned"]] == "pinned"
    assert statuses[ids["archived"]] == "archived"
    assert statuses[ids["forgotten"]] == "forgotten"
    assert all(len(m["embedding"]) == 384 and m["embed_model"] == "hash-v1-384" for m in first["memories"])
    assert {m["user_id"] for m in first["memories"]} == {USER}
    assert len(first["proposals"]) == 1

    erase = await api.post(f"/v1/users/{USER}/erase", {})
    assert erase.status_code == 200, erase.text
    receipt = erase.json()
    assert receipt["memories"] == len(first["memories"])
    assert receipt["events"] == len(first["events"])
    assert receipt["proposals"] == 1
    assert (await export(api, user_id=USER))["memories"] == []

    result = await import_(api, first)
    assert result["imported"] == len(first["memories"])
    assert (result["deduplicated"], result["superseded"], result["mismatched"], result["remapped"]) == (
        0,
        0,
        0,
        0,
    )
    second = await export(api, user_id=USER)
    assert second["memories"] == first["memories"]  # statuses, links, vectors, timestamps, counters
    assert second["proposals"] == first["proposals"]
    importer = next(e["actor"] for e in second["events"] if e["kind"] == "imported")
    assert without_import_events(second) == as_imported(without_import_events(first), importer)
    assert sum(e["kind"] == "imported" for e in second["events"]) == len(first["memories"])
    after = await api.recall(**query)
    assert after["context"] == before["context"]
    assert [m["memory"]["id"] for m in after["memories"]] == [m["memory"]["id"] for m in before["memories"]]
    assert (await export(api, user_id=OTHER))["memories"][0]["content"] == "Bob prefers tea over coffee"


async def test_importing_the_same_export_twice_deduplicates_everything(api: Api) -> None:
    await api.remember(user_id=USER, content="Prefers window seats on flights", type="preference")
    await api.remember(user_id=USER, content="Allergic to penicillin", type="constraint")
    document = await export(api, user_id=USER)
    result = await import_(api, document)
    assert result["imported"] == 0
    assert result["deduplicated"] == 2
    assert result["events"] == 0
    assert len((await export(api, user_id=USER))["events"]) == len(document["events"])


async def test_a_live_copy_under_another_id_is_deduplicated_by_content_hash(api: Api) -> None:
    kept = await api.remember(user_id=USER, content="Works from the Oslo office", type="fact")
    document = await export(api, user_id=USER)
    old, new = document["memories"][0]["id"], str(uuid.uuid4())
    document["memories"][0]["id"] = new
    for event in document["events"]:  # the document's own trail follows (an event names a memory of it)
        event["memory_id"] = new if event["memory_id"] == old else event["memory_id"]
    result = await import_(api, document)
    assert (result["imported"], result["deduplicated"]) == (0, 1)
    listing = (await api.get("/v1/memories", user_id=USER)).json()["items"]
    assert [m["id"] for m in listing] == [kept["memory"]["id"]]


async def test_colliding_ids_are_remapped_consistently(api: Api) -> None:
    old = await api.remember(user_id=USER, content="Drives a blue Volvo", subject="car", type="fact")
    new = await api.remember(user_id=USER, content="Drives a red Tesla", subject="car", type="fact")
    document = await export(api, user_id=USER)
    moved = copy.deepcopy(document)
    for m in moved["memories"]:
        m["user_id"] = "carol"  # same ids, another user: the ids now collide with different memories
    for e in moved["events"]:
        e["user_id"] = "carol"
    result = await import_(api, moved)
    assert (result["imported"], result["remapped"], result["deduplicated"]) == (2, 2, 0)
    carol = {m["content"]: m for m in (await export(api, user_id="carol"))["memories"]}
    volvo, tesla = carol["Drives a blue Volvo"], carol["Drives a red Tesla"]
    assert {volvo["id"], tesla["id"]}.isdisjoint({old["memory"]["id"], new["memory"]["id"]})
    assert volvo["superseded_by"] == tesla["id"]
    assert tesla["supersedes"] == volvo["id"]
    events = (await export(api, user_id="carol"))["events"]
    superseded = [e for e in events if e["kind"] == "superseded"]
    assert superseded[0]["memory_id"] == volvo["id"]
    assert superseded[0]["details"]["successor"] == tesla["id"]
    assert (await api.get(f"/v1/memories/{old['memory']['id']}")).json()["user_id"] == USER


async def test_an_imported_newer_memory_takes_the_slot_and_an_older_one_arrives_superseded(api: Api) -> None:
    current = await api.remember(user_id=USER, content="Lives in Bergen", subject="home city", type="fact")
    now = datetime.now(UTC)
    document = await export(api, user_id=USER)
    template = document["memories"][0]

    def incoming(content: str, valid_from: datetime) -> dict[str, Any]:
        fresh = {"id": str(uuid.uuid4()), "content": content, "valid_from": valid_from.isoformat()}
        return {**template, **fresh, "embedding": None, "content_hash": None}

    newer = incoming("Lives in Trondheim", now + timedelta(seconds=5))
    older = incoming("Lives in Stavanger", now - timedelta(days=400))
    result = await import_(api, {**document, "memories": [newer, older], "events": [], "proposals": []})
    assert (result["imported"], result["superseded"], result["mismatched"]) == (2, 2, 0)
    recall = await api.recall(user_id=USER, query="which city does the user live in", min_relevance=0)
    assert "Trondheim" in recall["context"]
    assert "Bergen" not in recall["context"]
    assert "Stavanger" not in recall["context"]
    got = (await api.get(f"/v1/memories/{current['memory']['id']}")).json()
    assert got["status"] == "superseded"
    assert got["superseded_by"] == newer["id"]


async def test_markdown_export_groups_by_type_strikes_superseded_and_marks_pinned(api: Api) -> None:
    await api.remember(user_id=USER, content="Use React for the frontend", type="decision", subject="ui")
    await api.remember(user_id=USER, content="Use Svelte for the frontend", type="decision", subject="ui")
    await api.remember(user_id=USER, content="Name is Alice", type="identity", pinned=True)
    await api.remember(user_id=USER, content="Has a heart condition", privacy="sensitive")
    response = await api.get("/v1/export", user_id=USER, format="markdown")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    md = response.text
    assert "### decision (2)" in md
    assert "### identity (1)" in md
    assert "- ~~Use React for the frontend~~ -> Use Svelte for the frontend" in md
    assert "- **pinned** Name is Alice" in md
    assert "Has a heart condition" in md
    assert "sensitive" in md


async def test_whole_tenant_export_holds_every_user(api: Api) -> None:
    await api.remember(user_id=USER, content="Alice likes chess")
    await api.remember(user_id=OTHER, content="Bob likes go")
    document = await export(api)
    assert {m["user_id"] for m in document["memories"]} == {USER, OTHER}
    assert document["user_id"] is None
    assert document["version"] == 1
    assert document["embed_model"] == "hash-v1-384"


async def test_another_tenant_cannot_export_and_its_import_stays_its_own(api: Api, other_api: Api) -> None:
    mine = await api.remember(user_id=USER, content="Alice's locker code is in the red notebook")
    assert (await export(other_api, user_id=USER))["memories"] == []
    assert "locker" not in (await other_api.get("/v1/export", user_id=USER, format="markdown")).text
    assert (await export(other_api))["memories"] == []
    document = await export(api, user_id=USER)
    result = await import_(other_api, document)
    # Ids are per tenant: the same id in another tenant is a different row, kept as is.
    assert (result["imported"], result["remapped"]) == (1, 0)
    theirs = (await export(other_api, user_id=USER))["memories"]
    assert [m["id"] for m in theirs] == [mine["memory"]["id"]]
    erase = await other_api.post(f"/v1/users/{USER}/erase", {})
    assert erase.json()["memories"] == 1
    assert (await api.get(f"/v1/memories/{mine['memory']['id']}")).status_code == 200
    assert len((await export(api, user_id=USER))["memories"]) == 1


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/v1/export", "GET"),
        ("/v1/import", "POST"),
        ("/v1/reembed", "POST"),
        ("/v1/users/u/erase", "POST"),
        ("/v1/erase", "POST"),
    ],
)
async def test_new_routes_need_a_valid_key(api: Api, path: str, method: str) -> None:
    for headers in ({}, {"Authorization": "Bearer egm_00000000_" + "x" * 43}, {"Authorization": "Basic x"}):
        response = await api.client.request(
            method, path, headers=headers, json={} if method == "POST" else None
        )
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "unauthorized"
