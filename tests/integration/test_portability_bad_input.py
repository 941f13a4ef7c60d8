"""Bad input on export, import, reembed and erase: a precise 4xx naming the first bad field, nothing written."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client
from tests.integration.test_bad_input import assert_error

USER = "bad-portability-user"
Mutation = Callable[[dict[str, Any]], Any]


async def state(api: Api) -> dict[str, Any]:
    """Everything the tenant holds (the whole-tenant export without its own timestamp) and its stats."""
    document = (await api.get("/v1/export")).json()
    document.pop("exported_at")
    return {"export": document, "stats": (await api.get("/v1/stats")).json()}


async def assert_refused(api: Api, document: dict[str, Any], mutate: Mutation, field: str) -> None:
    """The mutated document is a 422 naming `field` and writes nothing; the document itself imports."""
    before = await state(api)
    response = await api.post("/v1/import", mutate(document))
    assert_error(response, 422, "validation_error")
    assert field in response.json()["detail"], response.json()
    assert await state(api) == before
    assert (await api.post("/v1/import", document)).status_code == 200


@pytest.fixture
async def document(api: Api) -> dict[str, Any]:
    """A valid export of two memories, and the tenant emptied so an accepted import would show."""
    await api.remember(user_id=USER, content="Prefers the aisle seat", type="preference", subject="seat")
    await api.remember(user_id=USER, content="Speaks Norwegian and Swedish", tags=["language"])
    exported: dict[str, Any] = (await api.get("/v1/export", user_id=USER)).json()
    assert (await api.post(f"/v1/users/{USER}/erase", {})).status_code == 200
    return exported


def at(path: str, value: Any) -> Mutation:
    """Set `value` at a dotted path (`memories.1.type`) of a copy of the document."""

    def mutate(doc: dict[str, Any]) -> Any:
        doc = copy.deepcopy(doc)
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
        return doc

    return mutate


IMPORT_422: dict[str, tuple[Mutation, str]] = {
    "not-an-object": (lambda d: [d], "Expected `object`"),
    "missing-memories": (lambda d: {k: v for k, v in d.items() if k != "memories"}, "memories"),
    "future-version": (at("version", 2), "version"),
    "unknown-top-field": (at("colour", "red"), "colour"),
    "unknown-memory-field": (at("memories.1.colour", "red"), "memories[1]"),
    "bad-type": (at("memories.1.type", "gossip"), "memories[1].type"),
    "bad-status": (at("memories.0.status", "deleted"), "memories[0].status"),
    "bad-privacy": (at("memories.0.privacy", "secret"), "memories[0].privacy"),
    "importance-range": (at("memories.1.importance", 1.5), "memories[1].importance"),
    "importance-as-string": (at("memories.0.importance", "0.5"), "memories[0].importance"),
    "bad-id": (at("memories.0.id", "not-a-uuid"), "memories[0].id"),
    "empty-user": (at("memories.0.user_id", ""), "memories[0].user_id"),
    "blank-content": (at("memories.1.content", "   "), "memories[1].content"),
    "long-content": (at("memories.1.content", "x" * 8001), "memories[1].content"),
    "nul-content": (at("memories.0.content", "a\x00b"), "memories[0].content"),
    "naive-time": (at("memories.0.created_at", "2026-01-01T00:00:00"), "memories[0].created_at"),
    "ancient-time": (at("memories.1.valid_from", "1900-01-01T00:00:00Z"), "memories[1].valid_from"),
    "wrong-dimension": (at("memories.1.embedding", [0.1] * 17), "memories[1].embedding"),
    "zero-vector": (at("memories.0.embedding", [0.0] * 384), "memories[0].embedding"),
    "vector-of-strings": (at("memories.0.embedding", ["0.1"] * 384), "memories[0].embedding"),
    "long-subject": (at("memories.0.subject", "s" * 201), "memories[0].subject"),
    "long-tag": (at("memories.1.tags", ["t" * 101]), "memories[1].tags"),
    "bad-event-kind": (at("events.0.kind", "Not a kind!"), "events[0].kind"),
    "nul-in-details": (at("events.0.details", {"a": ["b\x00"]}), "events[0].details"),
    "event-without-time": (lambda d: at("events.0", {**d["events"][0], "created_at": None})(d), "events[0]"),
}


def duplicate_ids(doc: dict[str, Any]) -> Any:
    doc = copy.deepcopy(doc)
    doc["memories"][1]["id"] = doc["memories"][0]["id"]
    return doc


def empty_targets(doc: dict[str, Any]) -> Any:
    doc = copy.deepcopy(doc)
    proposal = {"id": "0b0c8f5e-4a3c-4f6e-9a51-6f0a8f3b8c11", "user_id": USER, "kind": "merge"}
    doc["proposals"] = [
        {**proposal, "target_ids": [], "status": "proposed", "created_at": "2026-01-01T00:00:00Z"}
    ]
    return doc


IMPORT_422["duplicate-ids"] = (duplicate_ids, "memories[1].id")
IMPORT_422["empty-proposal-targets"] = (empty_targets, "proposals[0].target_ids")


@pytest.mark.parametrize("case", list(IMPORT_422), ids=list(IMPORT_422))
async def test_a_bad_document_is_422_naming_the_first_bad_field_and_writes_nothing(
    api: Api, document: dict[str, Any], case: str
) -> None:
    await assert_refused(api, document, *IMPORT_422[case])


async def test_one_bad_memory_at_the_end_of_a_long_document_writes_none_of_the_others(api: Api) -> None:
    items = [{"user_id": USER, "content": f"fact number {i} about the garden"} for i in range(120)]
    assert (await api.post("/v1/memories/batch", {"items": items})).status_code == 201
    document = (await api.get("/v1/export", user_id=USER)).json()
    assert (await api.post(f"/v1/users/{USER}/erase", {})).status_code == 200
    before = await state(api)
    document["memories"][-1]["type"] = "gossip"
    response = await api.post("/v1/import", document)
    assert_error(response, 422, "validation_error")
    assert "memories[119].type" in response.json()["detail"]
    assert await state(api) == before


async def test_malformed_json_is_400_and_writes_nothing(api: Api, document: dict[str, Any]) -> None:
    before = await state(api)
    for body in (b"{not json", json.dumps(document).encode()[:-7]):
        response = await api.client.post("/v1/import", content=body, headers=api.headers)
        assert_error(response, 400, "bad_request")
    assert await state(api) == before


async def test_import_takes_bodies_over_the_general_limit_up_to_its_own(
    api: Api, settings: Settings, new_tenant: NewTenant
) -> None:
    items = [
        {"user_id": USER, "content": f"note {i}: the {i}th fact about topic {i * 13}"} for i in range(400)
    ]
    assert (await api.post("/v1/memories/batch", {"items": items})).status_code == 201
    raw = (await api.get("/v1/export", user_id=USER)).content
    assert len(raw) > settings.max_body_bytes  # over the 1 MiB of every other route
    general = await api.client.post("/v1/memories/batch", content=raw, headers=api.headers)
    assert_error(general, 413, "payload_too_large")
    tenant_id, key = await new_tenant()
    fresh = Api(api.client, key, tenant_id)
    response = await fresh.client.post("/v1/import", content=raw, headers=fresh.headers)
    assert response.status_code == 200, response.text[:300]
    assert response.json()["imported"] == 400

    small = settings.model_copy(update={"max_import_bytes": 4096})
    async with running_client(small) as client:
        limited = Api(client, key, tenant_id)
        before = await state(limited)
        too_big = await client.post("/v1/import", content=raw, headers=limited.headers)
        assert_error(too_big, 413, "payload_too_large")
        assert await state(limited) == before


EXPORT_422: list[dict[str, Any]] = [
    {"format": "xml"},
    {"user_id": "u" * 201},
    {"user_id": "a\x00b"},
    {"project_id": "billing"},  # a project belongs to a user
]


@pytest.mark.parametrize("params", EXPORT_422, ids=["format", "long-user", "nul-user", "project-alone"])
async def test_bad_export_parameters_are_422(api: Api, params: dict[str, Any]) -> None:
    assert_error(await api.get("/v1/export", **params), 422, "validation_error")


SMALL_422: list[tuple[str, Any]] = [
    ("/v1/reembed", {"colour": "red"}),
    ("/v1/reembed", {"limit": 0}),
    ("/v1/reembed", {"user_id": ""}),
    ("/v1/reembed", [1]),
    ("/v1/users/u/erase", {"colour": "red"}),
    ("/v1/users/u/erase", {"project_id": ""}),
    ("/v1/users/u/erase", {"project_id": 7}),
    ("/v1/users/" + "u" * 201 + "/erase", {}),
    ("/v1/users/a%00b/erase", {}),
]


@pytest.mark.parametrize(
    ("path", "body"), SMALL_422, ids=[f"{p[:18]}-{i}" for i, (p, _) in enumerate(SMALL_422)]
)
async def test_bad_reembed_and_erase_requests_are_422_and_change_nothing(
    api: Api, path: str, body: Any
) -> None:
    await api.remember(user_id="u", content="The office plant is a ficus")
    before = await state(api)
    response = await api.post(path, body)
    assert_error(response, 422, "validation_error")
    assert await state(api) == before


async def test_malformed_erase_and_reembed_bodies_are_400(api: Api) -> None:
    await api.remember(user_id="u", content="The office plant is a ficus")
    before = await state(api)
    for path in ("/v1/users/u/erase", "/v1/reembed"):
        response = await api.client.post(path, content=b"{nope", headers=api.headers)
        assert_error(response, 400, "bad_request")
    assert await state(api) == before
