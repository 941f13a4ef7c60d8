"""Change events reach a tenant's webhooks through the transactional outbox: signed, retried with
backoff until the receiver is back (each event exactly once by its id), dead-lettered after the last
attempt and redelivered on request; never another tenant's events, never memory content."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import set_tenant
from app.lib.settings import Settings
from app.main import create_app
from app.store.events import EventRecorder, NewEvent
from app.tenancy.types import TenantId
from app.vocabulary import EventKind
from app.webhooks.deliverer import Deliverer
from app.webhooks.signing import SigningKey, verify
from tests.conftest import Api, NewTenant
from tests.support.webhook_receiver import Receiver

MAX_ATTEMPTS = 3


@pytest.fixture(scope="module")
def hook_settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "webhook_allow_private": True,  # the receivers listen on loopback
            "webhook_backoff_base_s": 0.05,
            "webhook_backoff_max_s": 0.2,
            "webhook_max_attempts": MAX_ATTEMPTS,
            "webhook_timeout_s": 2.0,
        }
    )


@pytest.fixture(scope="module")
async def hook_client(hook_settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    async with AsyncTestClient(app=create_app(hook_settings)) as client:
        yield client


@pytest.fixture
async def deliverer(app_engine: AsyncEngine, hook_settings: Settings) -> AsyncIterator[Deliverer]:
    d = Deliverer(app_engine, hook_settings, SigningKey.of(hook_settings))
    yield d
    await d.aclose()


@pytest.fixture
async def a(hook_client: AsyncTestClient[Any], new_tenant: NewTenant) -> Api:
    tenant_id, key = await new_tenant()
    return Api(hook_client, key, tenant_id)


@pytest.fixture
async def b(hook_client: AsyncTestClient[Any], new_tenant: NewTenant) -> Api:
    tenant_id, key = await new_tenant()
    return Api(hook_client, key, tenant_id)


@pytest.fixture
def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    r.start()
    yield r  # type: ignore[misc]
    r.stop()


async def add_hook(api: Api, url: str, **extra: Any) -> dict[str, Any]:
    response = await api.post("/v1/webhooks", {"url": url, **extra})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def tenant_event_ids(engine: AsyncEngine, tenant: uuid.UUID) -> list[int]:
    async with engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        rows = await conn.execute(text("SELECT id FROM memory_events WHERE tenant_id = :t"), {"t": tenant})
        return sorted(r[0] for r in rows)


async def deliver_all(deliverer: Deliverer, rounds: int = 60) -> None:
    """Tick until a round finds nothing due and nothing pending is left (retries wait their backoff)."""
    for _ in range(rounds):
        await deliverer.tick()
        await asyncio.sleep(0.06)


async def pending(engine: AsyncEngine, tenant: uuid.UUID) -> Counter[str]:
    async with engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant)})
        rows = await conn.execute(
            text("SELECT state FROM webhook_deliveries WHERE tenant_id = :t"), {"t": tenant}
        )
        return Counter(r[0] for r in rows)


async def test_a_delivery_is_signed_with_its_webhooks_secret_and_carries_no_content(
    a: Api, receiver: Receiver, deliverer: Deliverer, app_engine: AsyncEngine
) -> None:
    created = await add_hook(a, receiver.url, description="audit sink")
    other = await add_hook(a, receiver.url + "/other", event_types=["forgotten"])
    assert created["secret"].startswith("whsec_")
    assert created["secret"] != other["secret"]
    memory = (await a.remember(user_id="u1", content="My locker code is 4711 and I like jazz"))["memory"]
    await deliverer.tick()
    [hit] = receiver.accepted()  # the `forgotten`-only webhook got nothing to send
    timestamp, signature = int(hit.headers["engram-timestamp"]), hit.headers["engram-signature"]
    assert verify(created["secret"], timestamp, hit.body, signature)
    assert not verify(other["secret"], timestamp, hit.body, signature)
    assert not verify(created["secret"], timestamp + 1, hit.body, signature)
    assert not verify(created["secret"], timestamp, hit.body.replace(b"u1", b"u2"), signature)
    event = hit.event
    assert event["id"] == int(hit.event_id) == (await tenant_event_ids(app_engine, a.tenant_id))[0]
    assert event["type"] == "memory.created"
    assert event["data"]["memory_id"] == memory["id"]
    assert event["data"]["user_id"] == "u1"
    assert b"jazz" not in hit.body
    assert b"4711" not in hit.body
    assert str(a.tenant_id).encode() not in hit.body
    # The secret is shown once: the list never carries it.
    listed = (await a.get("/v1/webhooks")).json()["items"]
    assert {h["id"] for h in listed} == {created["webhook"]["id"], other["webhook"]["id"]}
    assert "secret" not in str(listed)
    assert created["secret"] not in str(listed)


async def test_a_receiver_down_for_a_while_then_back_gets_each_event_exactly_once(
    a: Api, receiver: Receiver, deliverer: Deliverer, app_engine: AsyncEngine
) -> None:
    await add_hook(a, receiver.url)
    receiver.stop()  # connections refused
    await a.remember(user_id="u1", content="I live in Porto", subject="city")
    await a.remember(user_id="u1", content="I live in Lisbon", subject="city")  # created + superseded
    await a.post("/v1/forget", {"user_id": "u1", "subject": "city"})
    await deliverer.tick()
    assert receiver.hits == []
    assert (await pending(app_engine, a.tenant_id))["pending"] == 4
    receiver.start()
    receiver.status = 503  # up, but failing
    await asyncio.sleep(0.1)
    await deliverer.tick()
    assert {h.status for h in receiver.hits} == {503}
    receiver.status = 200
    await deliver_all(deliverer, rounds=20)
    accepted = Counter(int(h.event_id) for h in receiver.accepted())
    events = await tenant_event_ids(app_engine, a.tenant_id)
    assert len(events) == 4
    assert accepted == Counter(events)  # every event, each exactly once
    assert await pending(app_engine, a.tenant_id) == Counter({"delivered": 4})
    assert {h.event["type"] for h in receiver.accepted()} == {
        "memory.created",
        "memory.superseded",
        "memory.forgotten",
    }


async def test_two_deliverers_at_once_send_each_event_once(
    a: Api, receiver: Receiver, app_engine: AsyncEngine, hook_settings: Settings
) -> None:
    await add_hook(a, receiver.url)
    items = [{"user_id": "u1", "content": f"Fact number {i}"} for i in range(30)]
    assert (await a.post("/v1/memories/batch", {"items": items})).status_code == 201
    # A timeout long enough for a loaded machine: a timed-out attempt is retried (at least once, by
    # design), and this test is about two deliverers never sending the same lease, not about retries.
    patient = hook_settings.model_copy(update={"webhook_timeout_s": 30.0})
    workers = [Deliverer(app_engine, patient, SigningKey.of(patient)) for _ in range(3)]
    try:
        for _ in range(60):  # all three at once, until nothing is pending
            await asyncio.gather(*(w.tick() for w in workers))
            if not (await pending(app_engine, a.tenant_id))["pending"]:
                break
            await asyncio.sleep(0.06)
    finally:
        for w in workers:
            await w.aclose()
    assert Counter(int(h.event_id) for h in receiver.hits) == Counter(
        await tenant_event_ids(app_engine, a.tenant_id)
    )
    assert len(receiver.hits) == 30


async def test_no_event_of_another_tenant_reaches_a_webhook(
    a: Api, b: Api, deliverer: Deliverer, app_engine: AsyncEngine
) -> None:
    ra, rb = Receiver(), Receiver()
    ra.start()
    rb.start()
    try:
        await add_hook(a, ra.url)
        await add_hook(b, rb.url)
        await a.remember(user_id="shared-name", content="Tenant A prefers tea")
        await b.remember(user_id="shared-name", content="Tenant B prefers coffee")
        await b.remember(user_id="shared-name", content="Tenant B drives a van")
        await deliver_all(deliverer, rounds=3)
        assert Counter(int(h.event_id) for h in ra.accepted()) == Counter(
            await tenant_event_ids(app_engine, a.tenant_id)
        )
        assert Counter(int(h.event_id) for h in rb.accepted()) == Counter(
            await tenant_event_ids(app_engine, b.tenant_id)
        )
        assert len(ra.accepted()) == 1
        assert len(rb.accepted()) == 2
    finally:
        ra.stop()
        rb.stop()


async def test_after_the_last_attempt_a_delivery_is_a_dead_letter_until_redelivered(
    a: Api, b: Api, receiver: Receiver, deliverer: Deliverer, app_engine: AsyncEngine
) -> None:
    hook = (await add_hook(a, receiver.url))["webhook"]
    receiver.status = 503
    await a.remember(user_id="u1", content="I prefer aisle seats")
    await deliver_all(deliverer, rounds=15)
    assert len(receiver.hits) == MAX_ATTEMPTS
    attempts = [int(h.headers["engram-delivery-attempt"]) for h in receiver.hits]
    assert attempts == [1, 2, 3]
    assert len({h.event_id for h in receiver.hits}) == 1
    page = (await a.get("/v1/webhooks/dead-letters", webhook_id=hook["id"])).json()
    [dead] = page["items"]
    assert dead["state"] == "dead"
    assert dead["attempts"] == MAX_ATTEMPTS
    assert dead["last_status"] == 503
    assert dead["event_id"] == int(receiver.hits[0].event_id)
    assert "prefer" not in str(dead)
    # Tenant B neither lists nor redelivers A's dead letter.
    assert (await b.get("/v1/webhooks/dead-letters")).json()["items"] == []
    assert (await b.post(f"/v1/webhooks/dead-letters/{dead['id']}/redeliver")).status_code == 404
    receiver.status = 200
    redelivered = await a.post(f"/v1/webhooks/dead-letters/{dead['id']}/redeliver")
    assert redelivered.status_code == 200
    assert redelivered.json()["state"] == "pending"
    assert (await a.post(f"/v1/webhooks/dead-letters/{dead['id']}/redeliver")).status_code == 404
    await deliverer.tick()
    [ok] = receiver.accepted()
    assert ok.event_id == receiver.hits[0].event_id  # the same event id as the failed attempts
    assert (await a.get("/v1/webhooks/dead-letters")).json()["items"] == []


async def test_tenant_b_naming_tenant_as_webhook_sees_none_of_its_dead_letters(
    a: Api, b: Api, deliverer: Deliverer
) -> None:
    ra, rb = Receiver(), Receiver()
    ra.start()
    rb.start()
    ra.status = rb.status = 503
    try:
        hook_a = (await add_hook(a, ra.url))["webhook"]
        hook_b = (await add_hook(b, rb.url))["webhook"]
        await a.remember(user_id="shared-name", content="Tenant A prefers tea")
        await b.remember(user_id="shared-name", content="Tenant B prefers coffee")
        await deliver_all(deliverer, rounds=15)
    finally:
        ra.stop()
        rb.stop()
    [dead_a] = (await a.get("/v1/webhooks/dead-letters", webhook_id=hook_a["id"])).json()["items"]
    assert dead_a["webhook_id"] == hook_a["id"]  # sanity: A's own filter finds its dead letter
    for params in ({"webhook_id": hook_a["id"]}, {"webhook_id": hook_a["id"], "limit": 1}):
        page = await b.get("/v1/webhooks/dead-letters", **params)
        assert page.status_code == 200, page.text
        assert page.json() == {"items": [], "next_cursor": None}, params
    # B's own filter keeps working, and names only its own.
    theirs = (await b.get("/v1/webhooks/dead-letters", webhook_id=hook_b["id"])).json()["items"]
    assert [(d["webhook_id"], d["state"]) for d in theirs] == [(hook_b["id"], "dead")]
    assert (await b.get("/v1/webhooks/dead-letters")).json()["items"] == theirs


async def test_tenant_b_can_neither_list_nor_delete_tenant_as_webhook(a: Api, b: Api) -> None:
    hook = (await add_hook(a, "http://127.0.0.1:9/a"))["webhook"]
    assert (await b.get("/v1/webhooks")).json()["items"] == []
    assert (await b.delete(f"/v1/webhooks/{hook['id']}")).status_code == 404
    assert [h["id"] for h in (await a.get("/v1/webhooks")).json()["items"]] == [hook["id"]]
    deleted = await a.delete(f"/v1/webhooks/{hook['id']}")
    assert deleted.status_code == 200
    assert deleted.json()["id"] == hook["id"]
    assert (await a.delete(f"/v1/webhooks/{hook['id']}")).status_code == 404
    assert (await a.get("/v1/webhooks")).json()["items"] == []


async def test_an_event_is_in_the_outbox_only_if_its_transaction_commits(
    a: Api, app_engine: AsyncEngine
) -> None:
    await add_hook(a, "http://127.0.0.1:9/a")
    tenant = TenantId(a.tenant_id)
    event = NewEvent(uuid.uuid4(), "u1", None, EventKind.CREATED, None)
    sessions = async_sessionmaker(app_engine)
    async with sessions() as session, session.begin():
        await set_tenant(session, tenant)
        await EventRecorder(session, tenant, "test").record(event)
        assert (
            await session.execute(
                text("SELECT count(*) FROM webhook_deliveries WHERE tenant_id = :t"), {"t": a.tenant_id}
            )
        ).scalar_one() == 1
        await session.rollback()
    assert await pending(app_engine, a.tenant_id) == Counter()
    async with sessions() as session, session.begin():
        await set_tenant(session, tenant)
        await EventRecorder(session, tenant, "test").record(event, event)
    assert await pending(app_engine, a.tenant_id) == Counter({"pending": 2})


async def test_erasing_a_user_and_deciding_a_proposal_are_delivered_without_content(
    a: Api, receiver: Receiver, deliverer: Deliverer
) -> None:
    await add_hook(a, receiver.url)
    await a.remember(user_id="u1", content="Always encrypt backups", type="critical_rule", subject="backups")
    proposed = await a.remember(user_id="u1", content="Skip backups", type="critical_rule", subject="backups")
    [proposal_id] = proposed["proposals"]
    assert (await a.post(f"/v1/dream/proposals/{proposal_id}/reject")).status_code == 200
    memory = (await a.remember(user_id="u1", content="My passport number is X1234"))["memory"]
    assert (await a.delete(f"/v1/memories/{memory['id']}", erase="true")).status_code == 200
    assert (await a.post("/v1/users/u1/erase", {})).status_code == 200
    await deliver_all(deliverer, rounds=3)
    kinds = [h.event["data"]["kind"] for h in receiver.accepted()]
    assert "proposal_rejected" in kinds
    assert kinds.count("erased") == 2
    rejected = next(h.event for h in receiver.accepted() if h.event["data"]["kind"] == "proposal_rejected")
    assert rejected["data"]["details"]["proposal_id"] == proposal_id
    # Deliveries are unordered: the user's erase notice is the erased event that names no memory.
    erased = [h.event for h in receiver.accepted() if h.event["data"]["kind"] == "erased"]
    [user_erase] = [e for e in erased if e["data"]["memory_id"] is None]
    assert user_erase["type"] == "memory.erased"
    assert user_erase["data"]["memory_id"] is None
    assert user_erase["data"]["details"]["scope"] == "user"
    bodies = b"".join(h.body for h in receiver.hits)
    assert b"passport" not in bodies
    assert b"X1234" not in bodies
    assert b"backups" not in bodies.lower()


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"url": "ftp://example.com/hook"}, "http or https"),
        ({"url": "not a url"}, "whitespace"),
        ({"url": "http:///nohost"}, "host"),
        ({"url": "https://user:pw@example.com/hook"}, "credentials"),
        ({"url": "http://127.0.0.1:8080/hook"}, "loopback"),
        ({"url": "http://10.1.2.3/hook"}, "private"),
        ({"url": "http://[::1]/hook"}, "loopback"),
        ({"url": "http://169.254.169.254/latest/meta-data"}, "private"),
        ({"url": "http://example.com/" + "x" * 2000}, ""),
        ({"url": "https://example.com/hook", "event_types": ["exploded"]}, ""),
        ({"url": "https://example.com/hook", "secret": "mine"}, ""),
        ({}, ""),
    ],
)
async def test_a_bad_webhook_is_a_4xx_and_writes_nothing(
    api: Api, body: dict[str, Any], fragment: str
) -> None:
    # `api` is the suite's default app: private and loopback targets are refused there.
    response = await api.post("/v1/webhooks", body)
    assert 400 <= response.status_code < 500, response.text
    assert set(response.json()) >= {"error", "detail"}
    assert fragment in response.text
    assert (await api.get("/v1/webhooks")).json()["items"] == []


async def test_bad_ids_and_parameters_on_webhook_routes_are_4xx(a: Api) -> None:
    assert (await a.delete(f"/v1/webhooks/{uuid.uuid4()}")).status_code == 404
    assert (await a.post("/v1/webhooks/dead-letters/12345678/redeliver")).status_code == 404
    for response in (
        await a.delete("/v1/webhooks/not-a-uuid"),
        await a.post("/v1/webhooks/dead-letters/x/redeliver"),
        await a.get("/v1/webhooks/dead-letters", webhook_id="nope"),
        await a.get("/v1/webhooks/dead-letters", cursor="garbage"),
        await a.get("/v1/webhooks/dead-letters", limit=0),
    ):
        assert 400 <= response.status_code < 500, response.text


async def test_the_service_delivers_on_its_own_when_an_interval_is_set(
    hook_settings: Settings, new_tenant: NewTenant, receiver: Receiver
) -> None:
    tenant_id, key = await new_tenant()
    app = create_app(hook_settings.model_copy(update={"webhook_interval_s": 0.05}))
    async with AsyncTestClient(app=app) as client:
        api = Api(client, key, tenant_id)
        await add_hook(api, receiver.url)
        memory = (await api.remember(user_id="u1", content="I prefer window seats"))["memory"]
        for _ in range(200):
            if receiver.accepted():
                break
            await asyncio.sleep(0.05)
    [hit] = receiver.accepted()
    assert hit.event["data"]["memory_id"] == memory["id"]


async def test_an_import_announces_what_it_imported_not_the_history_it_copied(
    a: Api, b: Api, receiver: Receiver, deliverer: Deliverer
) -> None:
    await a.remember(user_id="u1", content="I live in Porto", subject="city")
    await a.remember(user_id="u1", content="I live in Lisbon", subject="city")
    document = (await a.get("/v1/export", user_id="u1")).json()
    await add_hook(b, receiver.url)
    imported = await b.post("/v1/import", document)
    assert imported.status_code == 200, imported.text
    await deliver_all(deliverer, rounds=3)
    kinds = Counter(h.event["data"]["kind"] for h in receiver.accepted())
    assert kinds == Counter({"imported": 2})  # the copied created/superseded events stay history


async def test_deleting_a_webhook_drops_what_it_still_had_to_deliver(
    a: Api, receiver: Receiver, deliverer: Deliverer, app_engine: AsyncEngine
) -> None:
    hook = (await add_hook(a, receiver.url))["webhook"]
    await a.remember(user_id="u1", content="I prefer trains")
    assert (await pending(app_engine, a.tenant_id)) == Counter({"pending": 1})
    assert (await a.delete(f"/v1/webhooks/{hook['id']}")).status_code == 200
    assert (await pending(app_engine, a.tenant_id)) == Counter()
    await deliverer.tick()
    assert receiver.hits == []


async def test_ids_past_a_bigint_are_422_not_an_overflow(a: Api) -> None:
    # Schemathesis found this one: an id past 2^63 - 1 reached PostgreSQL and overflowed (a 500).
    huge = 2**70
    for response in (
        await a.post(f"/v1/webhooks/dead-letters/{huge}/redeliver"),
        await a.client.get(f"/v1/events/stream?after={huge}", headers=a.headers),
        await a.client.get("/v1/events/stream", headers={**a.headers, "Last-Event-ID": "9" * 20}),
    ):
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "validation_error"
