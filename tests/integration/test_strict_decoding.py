"""Bodies are decoded strictly, before anything else reads them: nesting too deep for a decoder is a 400
on every route that takes a body (before the key is even looked up), a string where a number or a
boolean belongs is a 422, and list fields have caps. Each case writes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api
from tests.integration.test_bad_input import USER, VALID, assert_error, seeded, store

__all__ = ["seeded"]  # the fixture, imported for the tests below

FAKE_KEY = {"Authorization": "Bearer egm_00000000_" + "f" * 32, "Content-Type": "application/json"}
# The shape the issue reports: ~1,000 levels in under 2 kB.
DEEP = b'{"user_id": "u", "content": "x", "tags": ' + b"[" * 1000 + b"]" * 1000 + b"}"

BODY_ROUTES = [
    ("POST", "/v1/memories"),
    ("POST", "/v1/memories/batch"),
    ("PATCH", "/v1/memories/00000000-0000-0000-0000-000000000001"),
    ("POST", "/v1/recall"),
    ("POST", "/v1/forget"),
    ("POST", "/v1/chat"),
    ("POST", "/v1/memories/extract"),
    ("POST", "/v1/reembed"),
    ("POST", "/v1/users/someone/erase"),
    ("POST", "/v1/erase"),
    ("POST", "/v1/dream"),
    ("POST", "/v1/dream/apply"),
    ("POST", "/v1/import"),
]


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
async def test_deeply_nested_json_with_a_fake_key_is_a_400_not_a_500(
    api: Api, method: str, path: str
) -> None:
    assert len(DEEP) < 2100
    response = await api.client.request(method, path, content=DEEP, headers=FAKE_KEY)
    if path == "/v1/import":  # the import handler reads its body itself, after the key was checked
        assert_error(response, 401, "unauthorized")
        return
    assert_error(response, 400, "bad_request")
    assert "nests deeper" in response.json()["detail"]


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
async def test_deeply_nested_json_with_a_real_key_is_a_400_and_writes_nothing(
    api: Api, seeded: dict[str, Any], method: str, path: str
) -> None:
    before = await store(api)
    headers = {**api.headers, "Content-Type": "application/json"}
    response = await api.client.request(method, path, content=DEEP, headers=headers)
    assert_error(response, 400, "bad_request")
    assert await store(api) == before


async def test_nesting_inside_strings_does_not_count(api: Api, seeded: dict[str, Any]) -> None:
    content = "[" * 500 + '{"quoted \\" bracket": [' + "]" * 10
    created = await api.remember(user_id=USER, content=content)
    assert created["memory"]["content"] == content


async def test_an_import_nested_too_deep_inside_event_details_is_a_400(
    api: Api, seeded: dict[str, Any]
) -> None:
    """Event details are free JSON (`dict[str, Any]`), the one place a typed decoder still recurses."""
    before = await store(api)
    details = "[" * 40 + "]" * 40
    raw = (
        '{"version": 1, "exported_at": "2026-01-01T00:00:00Z", "memories": [], "events": [{"user_id": "u",'
        f' "kind": "created", "actor": "x", "created_at": "2026-01-01T00:00:00Z", "details": {{"a": {details}}}}}]}}'
    )
    json.loads(raw)  # guard: well-formed, only deep
    response = await api.client.post("/v1/import", content=raw.encode(), headers=api.headers)
    assert_error(response, 400, "bad_request")
    assert await store(api) == before


COERCED = {
    "importance-as-string": ("/v1/memories", {**VALID, "importance": "0.9"}, "importance"),
    "confidence-as-string": ("/v1/memories", {**VALID, "confidence": "1"}, "confidence"),
    "pinned-as-string": ("/v1/memories", {**VALID, "pinned": "true"}, "pinned"),
    "ttl-as-string": ("/v1/memories", {**VALID, "ttl_seconds": "60"}, "ttl_seconds"),
    "batch-item-importance": ("/v1/memories/batch", {"items": [{**VALID, "importance": "0.5"}]}, "items[0]"),
    "recall-budget-as-string": (
        "/v1/recall",
        {"user_id": USER, "query": "q", "token_budget": "100"},
        "token",
    ),
    "recall-sensitive-as-string": (
        "/v1/recall",
        {"user_id": USER, "query": "q", "include_sensitive": "true"},
        "include_sensitive",
    ),
    "recall-explain-as-number": ("/v1/recall", {"user_id": USER, "query": "q", "explain": 1}, "explain"),
    "forget-age-as-string": ("/v1/forget", {"user_id": USER, "filter": {"older_than_days": "3"}}, "filter"),
    "chat-budget-as-string": ("/v1/chat", {"user_id": USER, "message": "hi", "token_budget": "64"}, "token"),
    "reembed-limit-as-string": ("/v1/reembed", {"limit": "5"}, "limit"),
    "content-as-number": ("/v1/memories", {**VALID, "content": 42}, "content"),
}


@pytest.mark.parametrize(("path", "body", "field"), COERCED.values(), ids=COERCED.keys())
async def test_a_string_is_never_coerced_into_a_number_or_a_boolean(
    api: Api, seeded: dict[str, Any], path: str, body: dict[str, Any], field: str
) -> None:
    before = await store(api)
    response = await api.post(path, body)
    assert_error(response, 422, "validation_error")
    assert field in response.json()["detail"]
    assert await store(api) == before


async def test_a_patch_with_a_string_importance_is_422(api: Api, seeded: dict[str, Any]) -> None:
    before = await store(api)
    response = await api.patch(f"/v1/memories/{seeded['id']}", {"importance": "0.9"})
    assert_error(response, 422, "validation_error")
    assert await store(api) == before


async def test_the_string_null_is_text_not_a_missing_value(api: Api, seeded: dict[str, Any]) -> None:
    created = await api.remember(**VALID, summary="null")
    assert created["memory"]["summary"] == "null"


CAPPED = {
    "tags-51": ("/v1/memories", {**VALID, "tags": [f"t{i}" for i in range(51)]}, "tags"),
    "tags-10000": ("/v1/memories", {**VALID, "tags": ["t"] * 10000}, "tags"),
    "recall-types-51": ("/v1/recall", {"user_id": USER, "query": "q", "types": ["fact"] * 51}, "types"),
    "apply-ids-1001": (
        "/v1/dream/apply",
        {"proposal_ids": ["00000000-0000-0000-0000-000000000001"] * 1001},
        "proposal_ids",
    ),
    "batch-1001": ("/v1/memories/batch", {"items": [VALID] * 1001}, "items"),
}


@pytest.mark.parametrize(("path", "body", "field"), CAPPED.values(), ids=CAPPED.keys())
async def test_list_fields_have_caps(
    api: Api, seeded: dict[str, Any], path: str, body: dict[str, Any], field: str
) -> None:
    before = await store(api)
    response = await api.post(path, body)
    assert_error(response, 422, "validation_error")
    assert field in response.json()["detail"]
    assert await store(api) == before


async def test_patch_tags_have_the_same_cap(api: Api, seeded: dict[str, Any]) -> None:
    response = await api.patch(f"/v1/memories/{seeded['id']}", {"tags": [f"t{i}" for i in range(51)]})
    assert_error(response, 422, "validation_error")
    ok = await api.patch(f"/v1/memories/{seeded['id']}", {"tags": [f"t{i}" for i in range(50)]})
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize(
    ("method", "path", "query"),
    [
        ("GET", "/v1/memories", f"user_id={USER}&user_id=someone-else"),
        ("GET", "/v1/stats", f"user_id={USER}&user_id=someone-else"),
        ("GET", "/v1/export", f"user_id={USER}&user_id={USER}"),
        ("POST", "/v1/memories", "x=1&x=2"),
    ],
)
async def test_a_query_parameter_given_twice_is_a_422_naming_it_and_writes_nothing(
    api: Api, seeded: dict[str, Any], method: str, path: str, query: str
) -> None:
    before = await store(api)
    body = {"user_id": USER, "content": "I keep a spare key under the mat"} if method == "POST" else None
    response = await api.client.request(method, f"{path}?{query}", json=body, headers=api.headers)
    assert_error(response, 422, "validation_error")
    assert "given more than once" in response.json()["detail"]
    assert repr(query.split("=")[0]) in response.json()["detail"]
    assert await store(api) == before
