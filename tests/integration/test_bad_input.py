"""Bad input gets a precise 4xx in the API's error shape `{"error", "detail"}`, never a 500, and writes nothing."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from tests.conftest import Api

USER = "bad-input-user"
VALID = {"user_id": USER, "content": "I drink green tea every morning"}
BASE = {"user_id": USER, "query": "what do I drink?"}


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text[:300]
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    assert body["error"] == code, body
    assert isinstance(body["detail"], str), body
    assert body["detail"].strip(), body


async def store(api: Api) -> dict[str, Any]:
    """What the tenant holds: the user's memories (any status) and the user's and tenant's stats."""
    listing = await api.get("/v1/memories", user_id=USER, limit=500)
    assert listing.status_code == 200, listing.text
    return {
        "items": listing.json()["items"],
        "user": (await api.get("/v1/stats", user_id=USER)).json(),
        "tenant": (await api.get("/v1/stats")).json(),
    }


@pytest.fixture
async def seeded(api: Api) -> dict[str, Any]:
    """One active memory, so that 'unchanged' compares real content and not two empty stores."""
    result = await api.remember(**VALID, type="preference", subject="morning drink")
    memory: dict[str, Any] = result["memory"]
    return memory


async def test_the_valid_baselines_the_bad_cases_vary_are_accepted(api: Api, seeded: dict[str, Any]) -> None:
    before = await store(api)
    assert (await api.post("/v1/recall", BASE)).status_code == 200
    assert await store(api) != before  # a good recall reinforces, so "unchanged" below means something
    assert (await api.post("/v1/memories", VALID)).status_code == 201
    assert (await api.post("/v1/memories", {**VALID, "content": "x" * 8000})).status_code == 201
    assert (await api.post("/v1/memories/batch", {"items": [VALID]})).status_code == 201
    assert (await api.post("/v1/recall", {**BASE, "token_budget": 32768})).status_code == 200
    assert (await api.post("/v1/forget", {"user_id": USER, "filter": {"type": "fact"}})).status_code == 200
    assert (await api.get("/v1/memories", user_id=USER, limit=500)).status_code == 200


CREATE_422 = {
    "unknown-field": {**VALID, "colour": "red"},
    "user_id-not-string": {**VALID, "user_id": 42},
    "content-not-string": {**VALID, "content": ["tea"]},
    "importance-not-number": {**VALID, "importance": "high"},
    "tags-not-list": {**VALID, "tags": "a,b"},
    "pinned-not-bool": {**VALID, "pinned": "yes"},
    "expires_at-not-datetime": {**VALID, "expires_at": "next tuesday"},
    "missing-user_id": {"content": VALID["content"]},
    "missing-content": {"user_id": USER},
    "empty-user_id": {**VALID, "user_id": ""},
    "empty-content": {**VALID, "content": ""},
    "blank-content": {**VALID, "content": "  \n\t "},
    "content-8001-chars": {**VALID, "content": "x" * 8001},
    "importance-below-0": {**VALID, "importance": -0.01},
    "importance-above-1": {**VALID, "importance": 1.01},
    "confidence-below-0": {**VALID, "confidence": -1},
    "confidence-above-1": {**VALID, "confidence": 1.5},
    "unknown-type": {**VALID, "type": "opinion"},
    "unknown-privacy": {**VALID, "privacy": "top-secret"},
    "ttl-zero": {**VALID, "ttl_seconds": 0},
    "ttl-negative": {**VALID, "ttl_seconds": -60},
    "expires_at-and-ttl": {**VALID, "expires_at": "2999-01-01T00:00:00Z", "ttl_seconds": 60},
    "body-is-array": [VALID],
    "body-is-null": None,
    # Not named by the contract's limits, but a 500 is never allowed: these must be refused up front.
    "nul-byte-in-content": {**VALID, "content": "green\x00tea"},
    "nul-byte-in-user_id": {**VALID, "user_id": "bad\x00user"},
    "nul-byte-in-subject": {**VALID, "subject": "morning\x00drink"},
    "user_id-too-long": {**VALID, "user_id": "u" * 1000},
    "project_id-too-long": {**VALID, "project_id": "p" * 1000},
    "ttl-overflows": {**VALID, "ttl_seconds": 10**18},
}


@pytest.mark.parametrize("body", CREATE_422.values(), ids=CREATE_422.keys())
async def test_bad_create_is_422_and_writes_nothing(api: Api, seeded: dict[str, Any], body: Any) -> None:
    before = await store(api)
    headers = {**api.headers, "Content-Type": "application/json"}
    response = await api.client.post("/v1/memories", content=json.dumps(body).encode(), headers=headers)
    assert_error(response, 422, "validation_error")
    assert await store(api) == before


RAW = {
    "truncated-json": (b'{"user_id": "bad-input-user", "content": "tea"', 400, "bad_request"),
    "not-json": (b"{user_id: bad-input-user}", 400, "bad_request"),
    "single-quoted-json": (b"{'user_id': 'bad-input-user', 'content': 'tea'}", 400, "bad_request"),
    "over-1-mib": (json.dumps({**VALID, "content": "x" * 2**20}).encode(), 413, "payload_too_large"),
}


@pytest.mark.parametrize("path", ["/v1/memories", "/v1/memories/batch", "/v1/recall", "/v1/forget"])
@pytest.mark.parametrize(("raw", "status", "code"), RAW.values(), ids=RAW.keys())
async def test_unreadable_or_oversized_body_is_refused_and_writes_nothing(
    api: Api, seeded: dict[str, Any], path: str, raw: bytes, status: int, code: str
) -> None:
    before = await store(api)
    headers = {**api.headers, "Content-Type": "application/json"}
    assert_error(await api.client.post(path, content=raw, headers=headers), status, code)
    assert await store(api) == before


GOOD = [{"user_id": USER, "content": f"batch fact number {i}"} for i in range(5)]
BATCH_BAD = {
    "importance": (2, {"importance": 2}),
    "empty-content": (4, {"content": ""}),
    "unknown-field": (1, {"colour": "red"}),
    "unknown-type": (3, {"type": "opinion"}),
    "ttl": (0, {"ttl_seconds": 0}),
}


@pytest.mark.parametrize(("index", "bad"), BATCH_BAD.values(), ids=BATCH_BAD.keys())
async def test_batch_with_one_bad_item_is_422_naming_it_and_writes_none_of_the_good_ones(
    api: Api, seeded: dict[str, Any], index: int, bad: dict[str, Any]
) -> None:
    before = await store(api)
    items = [dict(g) for g in GOOD]
    items[index] |= bad
    response = await api.post("/v1/memories/batch", {"items": items})
    assert_error(response, 422, "validation_error")
    assert f"items[{index}]" in response.json()["detail"]
    assert await store(api) == before


async def test_batch_of_valid_items_over_1_mib_is_413_and_writes_nothing(
    api: Api, seeded: dict[str, Any]
) -> None:
    before = await store(api)
    items = [{"user_id": USER, "content": f"{i} " + "y" * 7900} for i in range(140)]
    assert_error(await api.post("/v1/memories/batch", {"items": items}), 413, "payload_too_large")
    assert await store(api) == before


@pytest.mark.parametrize(
    "body",
    [{"items": []}, {"items": [VALID] * 1001}, {}, {"items": VALID}, {"items": [VALID], "dry_run": True}],
    ids=["zero-items", "1001-items", "missing-items", "items-not-list", "unknown-field"],
)
async def test_bad_batch_shape_is_422_and_writes_nothing(
    api: Api, seeded: dict[str, Any], body: dict[str, Any]
) -> None:
    before = await store(api)
    assert_error(await api.post("/v1/memories/batch", body), 422, "validation_error")
    assert await store(api) == before


RECALL_422 = {
    "empty-query": {**BASE, "query": ""},
    "blank-query": {**BASE, "query": "   "},
    "missing-query": {"user_id": USER},
    "empty-user_id": {**BASE, "user_id": ""},
    "budget-0": {**BASE, "token_budget": 0},
    "budget-negative": {**BASE, "token_budget": -5},
    "budget-100000": {**BASE, "token_budget": 100000},
    "unknown-type": {**BASE, "types": ["opinion"]},
    "unknown-prefer_type": {**BASE, "prefer_type": "opinion"},
    "min_relevance-above-1": {**BASE, "min_relevance": 1.5},
    "unknown-field": {**BASE, "top_k": 5},
}


@pytest.mark.parametrize("body", RECALL_422.values(), ids=RECALL_422.keys())
async def test_bad_recall_is_422_and_reinforces_nothing(
    api: Api, seeded: dict[str, Any], body: dict[str, Any]
) -> None:
    before = await store(api)
    assert_error(await api.post("/v1/recall", body), 422, "validation_error")
    assert await store(api) == before  # access_count and last_accessed_at untouched


FORGET_422 = {
    "no-selector": {},
    "memory_id-and-query": {"memory_id": "{id}", "query": "green tea"},
    "query-and-subject": {"query": "green tea", "subject": "morning drink"},
    "subject-and-filter": {"subject": "morning drink", "filter": {"type": "preference"}},
    "all-four": {"memory_id": "{id}", "query": "tea", "subject": "morning drink", "filter": {"type": "fact"}},
    "filter-without-condition": {"filter": {}},
    "filter-unknown-type": {"filter": {"type": "opinion"}},
    "filter-unknown-field": {"filter": {"colour": "red"}},
    "memory_id-not-uuid": {"memory_id": "not-a-uuid"},
    "empty-query": {"query": ""},
    "generic-subject": {"subject": "user"},
    "filter-age-overflows": {"filter": {"older_than_days": 1e308}},
}


@pytest.mark.parametrize("selectors", FORGET_422.values(), ids=FORGET_422.keys())
async def test_bad_forget_is_422_and_forgets_nothing(
    api: Api, seeded: dict[str, Any], selectors: dict[str, Any]
) -> None:
    before = await store(api)
    body = {"user_id": USER, **json.loads(json.dumps(selectors).replace("{id}", seeded["id"]))}
    assert_error(await api.post("/v1/forget", body), 422, "validation_error")
    assert await store(api) == before


LIST_422 = {
    "limit-0": {"limit": 0},
    "limit-501": {"limit": 501},
    "limit-not-int": {"limit": "ten"},
    "cursor-garbage": {"cursor": "not-a-cursor"},
    "cursor-base64-garbage": {"cursor": base64.urlsafe_b64encode(b"garbage").decode()},
    "cursor-bad-uuid": {"cursor": base64.urlsafe_b64encode(b"2024-01-01T00:00:00Z|not-a-uuid").decode()},
    "cursor-not-utf8": {"cursor": base64.urlsafe_b64encode(b"\xff\xfe").decode()},
    "unknown-status": {"status": "deleted"},
    "unknown-type": {"type": "opinion"},
}


@pytest.mark.parametrize("params", LIST_422.values(), ids=LIST_422.keys())
async def test_bad_list_query_is_422(api: Api, seeded: dict[str, Any], params: dict[str, Any]) -> None:
    assert_error(await api.get("/v1/memories", user_id=USER, **params), 422, "validation_error")


async def test_list_without_user_id_is_422(api: Api, seeded: dict[str, Any]) -> None:
    assert_error(await api.get("/v1/memories"), 422, "validation_error")


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/memories", {"user_id": USER, "q": "tea\x00"}),
        ("/v1/memories", {"user_id": USER, "subject": "drink\x00"}),
        ("/v1/memories", {"user_id": "bad\x00user"}),
        ("/v1/stats", {"user_id": "bad\x00user"}),
    ],
    ids=["list-q", "list-subject", "list-user_id", "stats-user_id"],
)
async def test_nul_byte_in_a_read_filter_is_never_a_500(
    api: Api, seeded: dict[str, Any], path: str, params: dict[str, str]
) -> None:
    """PostgreSQL text cannot hold NUL: either refuse it (422) or match nothing with it (200)."""
    response = await api.get(path, **params)
    assert response.status_code in (200, 422), response.text[:300]
    if response.status_code == 422:
        assert_error(response, 422, "validation_error")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/memories/not-a-uuid"),
        ("PATCH", "/v1/memories/not-a-uuid"),
        ("DELETE", "/v1/memories/not-a-uuid"),
        ("POST", "/v1/memories/not-a-uuid/pin"),
        ("POST", "/v1/memories/123/restore"),
        ("GET", "/v1/memories/123/history"),
    ],
)
async def test_non_uuid_id_in_path_is_a_4xx_in_the_error_shape(
    api: Api, seeded: dict[str, Any], method: str, path: str
) -> None:
    before = await store(api)
    response = await api.client.request(method, path, json={"importance": 0.9}, headers=api.headers)
    codes = {400: "bad_request", 404: "not_found", 422: "validation_error"}
    assert response.status_code in codes, response.text
    assert_error(response, response.status_code, codes[response.status_code])
    assert await store(api) == before


PATCH_422 = {
    "unknown-field": {"colour": "red"},
    "status-not-patchable": {"status": "forgotten"},
    "user_id-not-patchable": {"user_id": "someone-else"},
    "importance-above-1": {"importance": 2},
    "confidence-below-0": {"confidence": -0.1},
    "importance-not-number": {"importance": "high"},
    "unknown-type": {"type": "opinion"},
    "unknown-privacy": {"privacy": "secret"},
    "empty-content": {"content": ""},
    "null-content": {"content": None},
    "tags-not-list": {"tags": "a"},
    "content-8001-chars": {"content": "x" * 8001},
    "nul-byte-in-content": {"content": "green\x00tea"},
}


@pytest.mark.parametrize("body", PATCH_422.values(), ids=PATCH_422.keys())
async def test_bad_patch_is_422_and_changes_nothing(
    api: Api, seeded: dict[str, Any], body: dict[str, Any]
) -> None:
    before = await store(api)
    history = (await api.get(f"/v1/memories/{seeded['id']}/history")).json()
    assert_error(await api.patch(f"/v1/memories/{seeded['id']}", body), 422, "validation_error")
    assert await store(api) == before
    assert (await api.get(f"/v1/memories/{seeded['id']}/history")).json() == history


@pytest.mark.parametrize(
    ("setup", "action"),
    [([], "restore"), ([], "unpin"), (["archive"], "archive"), (["archive"], "pin")],
    ids=["restore-active", "unpin-not-pinned", "archive-archived", "pin-archived"],
)
async def test_impossible_state_change_is_409_and_changes_nothing(
    api: Api, seeded: dict[str, Any], setup: list[str], action: str
) -> None:
    for step in setup:
        assert (await api.post(f"/v1/memories/{seeded['id']}/{step}")).status_code == 200
    before = await store(api)
    assert_error(await api.post(f"/v1/memories/{seeded['id']}/{action}"), 409, "conflict")
    assert await store(api) == before


async def test_an_accepted_observed_at_never_breaks_later_reads(api: Api) -> None:
    """Either refuse an absurd observed_at up front, or store it so that recall and forget still work."""
    response = await api.post("/v1/memories", {**VALID, "observed_at": "0001-01-01T00:00:00Z"})
    if response.status_code != 201:
        assert_error(response, 422, "validation_error")
        return
    recall = await api.post("/v1/recall", BASE)
    assert recall.status_code == 200, recall.text
    forget = await api.post("/v1/forget", {"user_id": USER, "filter": {"older_than_days": 1}})
    assert forget.status_code == 200, forget.text
