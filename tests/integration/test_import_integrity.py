"""An import cannot smuggle in what the service itself would never write: vectors the column cannot
hold, supersession links to nothing, to itself or in a cycle, events of memories that do not exist or of
another user, events of unknown kinds or from the future, or an audit trail under another actor's name.
Each refused document is a 422 naming the field and writes nothing; the actor is neutralised."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Api
from tests.integration.test_portability_bad_input import (
    USER,
    Mutation,
    assert_refused,
    at,
    document,
)

__all__ = ["document"]  # the fixture: two memories exported, then erased


def linked(link: str, target: int | str) -> Mutation:
    """memories[0].<link> = the id of memories[target] (or a literal id)."""

    def mutate(doc: dict[str, Any]) -> Any:
        doc = copy.deepcopy(doc)
        doc["memories"][0][link] = doc["memories"][target]["id"] if isinstance(target, int) else target
        return doc

    return mutate


def cycle(doc: dict[str, Any]) -> Any:
    doc = copy.deepcopy(doc)
    first, second = doc["memories"]
    first["supersedes"], second["supersedes"] = second["id"], first["id"]
    return doc


def event(**fields: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> Any:
        doc = copy.deepcopy(doc)
        base = {"memory_id": doc["memories"][0]["id"], "user_id": USER, "kind": "pinned", "actor": "key:x"}
        doc["events"].append({**base, "created_at": "2026-01-01T00:00:00Z", "details": {}, **fields})
        return doc

    return mutate


FUTURE = (datetime.now(UTC) + timedelta(days=2)).isoformat()
NOWHERE = str(uuid.uuid4())

INTEGRITY_422: dict[str, tuple[Mutation, str]] = {
    "embedding-1e308": (at("memories.0.embedding", [1e308] + [0.1] * 383), "memories[0].embedding"),
    "embedding-minus-1e300": (at("memories.1.embedding", [0.1] * 383 + [-1e300]), "memories[1].embedding"),
    "embedding-past-float32": (at("memories.0.embedding", [3.5e38] * 384), "memories[0].embedding"),
    "supersedes-nothing": (linked("supersedes", NOWHERE), "memories[0].supersedes"),
    "superseded_by-nothing": (linked("superseded_by", NOWHERE), "memories[0].superseded_by"),
    "supersedes-itself": (linked("supersedes", 0), "memories[0].supersedes"),
    "superseded_by-itself": (linked("superseded_by", 0), "memories[0].superseded_by"),
    "supersession-cycle": (cycle, "supersedes"),
    "event-of-unknown-memory": (event(memory_id=NOWHERE), "memory_id"),
    "event-of-another-user": (event(user_id="mallory"), "user_id"),
    "event-unknown-kind": (event(kind="teleported"), "kind"),  # ("promoted" is a kind now: issue 25)
    "event-from-the-future": (event(created_at=FUTURE), "created_at"),
}


@pytest.mark.parametrize("case", list(INTEGRITY_422), ids=list(INTEGRITY_422))
async def test_an_impossible_document_is_422_naming_the_field_and_writes_nothing(
    api: Api, document: dict[str, Any], case: str
) -> None:
    await assert_refused(api, document, *INTEGRITY_422[case])


async def test_links_inside_the_document_and_events_of_an_erased_memory_are_kept(api: Api) -> None:
    """What real exports carry still imports: a chain, and the scrubbed trail of an erased memory."""
    old = await api.remember(user_id=USER, content="Uses Postgres 15", subject="database version")
    new = await api.remember(user_id=USER, content="Uses Postgres 18", subject="database version")
    gone = await api.remember(user_id=USER, content="A note that will be erased")
    erased = await api.delete(f"/v1/memories/{gone['memory']['id']}", erase="true")
    assert erased.status_code == 200, erased.text
    doc = (await api.get("/v1/export", user_id=USER)).json()
    assert any(e["kind"] == "erased" and e["memory_id"] == gone["memory"]["id"] for e in doc["events"])
    assert (await api.post(f"/v1/users/{USER}/erase", {})).status_code == 200

    assert (await api.post("/v1/import", doc)).status_code == 200
    again = (await api.get("/v1/export", user_id=USER)).json()
    by_id = {m["id"]: m for m in again["memories"]}
    assert by_id[new["memory"]["id"]]["supersedes"] == old["memory"]["id"]
    assert by_id[old["memory"]["id"]]["superseded_by"] == new["memory"]["id"]
    assert any(e["kind"] == "erased" and e["memory_id"] == gone["memory"]["id"] for e in again["events"])


async def test_imported_events_are_recorded_under_the_importer_with_the_claimed_actor_kept(
    api: Api, document: dict[str, Any]
) -> None:
    forged = event(actor="maintenance", kind="archived", details={"from": "active"})(document)
    response = await api.post("/v1/import", forged)
    assert response.status_code == 200, response.text
    events = (await api.get("/v1/export", user_id=USER)).json()["events"]
    archived = [e for e in events if e["kind"] == "archived"]
    assert len(archived) == 1
    assert archived[0]["actor"].startswith("key:")  # the key that imported, not "maintenance"
    assert archived[0]["details"] == {"from": "active", "original_actor": "maintenance"}
    assert all(e["actor"].startswith("key:") for e in events)
