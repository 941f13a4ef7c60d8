"""Dreaming and timeline endpoints: another tenant gets 404 or nothing; bad input is a 4xx that writes
nothing; every route refuses a missing or unknown key with 401."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.conftest import Api
from tests.integration.test_bad_input import assert_error
from tests.integration.test_dream import decide, dream, duplicates, merge_of
from tests.support.tables import table_rows

TABLES = ("memories", "memory_access", "memory_events", "dream_proposals")


async def everything(owner_engine: AsyncEngine, api: Api) -> dict[str, list[str]]:
    return {t: await table_rows(owner_engine, t, api.tenant_id) for t in TABLES}


async def seeded(api: Api) -> tuple[dict[str, Any], dict[str, Any]]:
    """A's duplicates and an approved merge of them; returns (merge proposal, rejected-able proposal)."""
    a, b = await duplicates(api)
    merge = merge_of(await dream(api), a["id"], b["id"])
    await decide(api, merge["id"], "approve")
    pinned = await api.remember(user_id="u", content="Timezone is CET", subject="timezone", pinned=True)
    later = await api.remember(user_id="u", content="Timezone is PST", subject="timezone")
    assert pinned["memory"]["status"] == "pinned"
    [open_id] = later["proposals"]
    return merge, {"id": open_id}


async def test_another_tenant_cannot_see_decide_or_apply_our_proposals(
    api: Api, other_api: Api, owner_engine: AsyncEngine
) -> None:
    merge, pending = await seeded(api)
    before = await everything(owner_engine, api)

    listing = await other_api.get("/v1/dream/proposals", user_id="u")
    assert listing.json() == {"items": [], "next_cursor": None}
    for proposal_id in (merge["id"], pending["id"]):
        for verb in ("approve", "reject"):
            foreign = await other_api.post(f"/v1/dream/proposals/{proposal_id}/{verb}")
            unknown_id = str(uuid.uuid4())
            unknown = await other_api.post(f"/v1/dream/proposals/{unknown_id}/{verb}")
            assert foreign.status_code == unknown.status_code == 404
            assert foreign.json()["detail"].replace(proposal_id, unknown_id) == unknown.json()["detail"]
    foreign_apply = await other_api.post("/v1/dream/apply", {"proposal_ids": [merge["id"]]})
    assert foreign_apply.status_code == 404
    by_user = (await other_api.post("/v1/dream/apply", {"user_id": "u"})).json()
    assert (by_user["applied"], by_user["skipped"], by_user["results"]) == (0, 0, [])
    other_dream = await other_api.post("/v1/dream", {"user_id": "u"})
    assert other_dream.status_code == 200
    assert other_dream.json()["proposals"] == []
    timeline = await other_api.get("/v1/timeline", user_id="u")
    assert timeline.json() == {"items": [], "next_cursor": None}

    assert await everything(owner_engine, api) == before
    mine = (await api.post("/v1/dream/apply", {"proposal_ids": [merge["id"]]})).json()
    assert mine["merged"] == 1  # A's own key can, so B's 404s meant something


def routes(proposal_id: str) -> list[tuple[str, str, dict[str, Any], Any]]:
    return [
        ("POST", "/v1/dream", {}, {"user_id": "u"}),
        ("GET", "/v1/dream/proposals", {"user_id": "u"}, None),
        ("POST", f"/v1/dream/proposals/{proposal_id}/approve", {}, None),
        ("POST", f"/v1/dream/proposals/{proposal_id}/reject", {}, None),
        ("POST", "/v1/dream/apply", {}, {"user_id": "u"}),
        ("GET", "/v1/timeline", {"user_id": "u"}, None),
    ]


@pytest.mark.parametrize("header", [None, "Bearer egm_00000000_thiskeywasneverissued", "Basic abc"])
async def test_every_dream_and_timeline_route_refuses_bad_credentials(
    api: Api, owner_engine: AsyncEngine, header: str | None
) -> None:
    merge, _ = await seeded(api)
    before = await everything(owner_engine, api)
    headers = {"Authorization": header} if header else {}
    for method, path, params, body in routes(merge["id"]):
        response = await api.client.request(method, path, params=params, json=body, headers=headers)
        assert_error(response, 401, "unauthorized")
    assert await everything(owner_engine, api) == before


DREAM_422 = {
    "missing-user": {},
    "empty-user": {"user_id": ""},
    "unknown-field": {"user_id": "u", "dry_run": True},
    "nul-user": {"user_id": "u\x00"},
    "long-project": {"user_id": "u", "project_id": "p" * 201},
    "user-not-a-string": {"user_id": 7},
}

APPLY_422 = {
    "neither": {},
    "both": {"user_id": "u", "proposal_ids": [str(uuid.uuid4())]},
    "empty-ids": {"proposal_ids": []},
    "not-uuids": {"proposal_ids": ["merge-1"]},
    "too-many": {"proposal_ids": [str(uuid.uuid4()) for _ in range(501)]},
    "unknown-field": {"user_id": "u", "force": True},
    "blank-user": {"user_id": "   "},
}

QUERY_422 = [
    ("/v1/dream/proposals", {"user_id": "u", "status": "maybe"}),
    ("/v1/dream/proposals", {"user_id": "u", "cursor": "not-a-cursor"}),
    ("/v1/dream/proposals", {"user_id": "u", "limit": 0}),
    ("/v1/dream/proposals", {"user_id": "u", "limit": 501}),
    ("/v1/dream/proposals", {}),
    ("/v1/timeline", {"user_id": "u", "cursor": "bm90LWEtY3Vyc29y"}),
    ("/v1/timeline", {"user_id": "u", "limit": 0}),
    ("/v1/timeline", {"user_id": "   "}),
    ("/v1/timeline", {}),
]


async def test_bad_dream_apply_and_listing_input_is_refused_and_writes_nothing(
    api: Api, owner_engine: AsyncEngine
) -> None:
    merge, _ = await seeded(api)
    before = await everything(owner_engine, api)
    for name, body in DREAM_422.items():
        response = await api.post("/v1/dream", body)
        assert response.status_code == 422, (name, response.text)
        assert_error(response, 422, "validation_error")
    for name, body in APPLY_422.items():
        response = await api.post("/v1/dream/apply", body)
        assert response.status_code == 422, (name, response.text)
        assert_error(response, 422, "validation_error")
    for path, params in QUERY_422:
        response = await api.get(path, **params)
        assert response.status_code == 422, (path, params, response.text)
        assert_error(response, 422, "validation_error")
    malformed = await api.client.post(
        "/v1/dream/apply",
        content=b'{"user_id": ',
        headers={**api.headers, "Content-Type": "application/json"},
    )
    assert_error(malformed, 400, "bad_request")
    missing = await api.post("/v1/dream/apply", {"proposal_ids": [merge["id"], str(uuid.uuid4())]})
    assert_error(missing, 404, "not_found")  # one unknown id: nothing of the request is applied
    assert await everything(owner_engine, api) == before


async def test_decisions_follow_the_proposal_states(api: Api) -> None:
    merge, pending = await seeded(api)
    assert (await decide(api, merge["id"], "approve"))["status"] == "approved"  # repeating is a no-op
    assert (await decide(api, pending["id"], "reject"))["status"] == "rejected"
    refused = await api.post(f"/v1/dream/proposals/{pending['id']}/approve")
    assert_error(refused, 409, "conflict")
    assert (await decide(api, merge["id"], "reject"))["status"] == "rejected"  # approved can still be refused
    report = (await api.post("/v1/dream/apply", {"proposal_ids": [merge["id"], pending["id"]]})).json()
    assert (report["applied"], report["skipped"]) == (0, 2)
    assert {r["reason"] for r in report["results"]} == {"rejected"}
