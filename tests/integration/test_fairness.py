"""A worker's turns over HTTP (app/lib/fairness.py, app/api/limits.py): with one slot per worker, a
request that waits on something outside the worker (a remote model's answer, its tenant's concurrency
slot held elsewhere) hands its turn back, so another tenant's request is served meanwhile; and a request
waiting for a turn has begun no transaction."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from app.main import create_app
from app.memory.slots import slot_lock_key
from tests.conftest import NewTenant
from tests.support.live_server import serve_in_thread
from tests.support.scripted_openai import ChatStep, ScriptedOpenAI

USER = "fairness-user"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(embedding_dim=128) as server:
        yield server


def _client(url: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


async def _served_while_pending(
    pending: asyncio.Task[httpx.Response], other: httpx.AsyncClient
) -> httpx.Response:
    """Tenant B's list, sent while `pending` waits; returns it once it is answered (asserting that
    `pending` had not finished by then)."""
    answered = await other.get("/v1/memories", params={"user_id": USER})
    assert not pending.done(), "the other tenant's request waited for the first one to finish"
    return answered


async def test_a_remote_model_wait_hands_the_workers_turn_to_another_tenant(
    settings: Settings, model: ScriptedOpenAI, new_tenant: NewTenant
) -> None:
    model.reset()
    online = settings.model_copy(
        update={
            "openai_base_url": model.base_url,
            "openai_api_key": SecretStr("sk-test-key-for-the-scripted-server-0001"),
            "embedder": "openai",
            "chat_model": "scripted-chat",
            "embed_model": "scripted-embedding",
            "embed_dim": 128,
            "model_timeout_s": 10.0,
            "worker_slots": 1,
            "limit_queue_s": 5.0,
        }
    )
    (_, key_a), (_, key_b) = await new_tenant(), await new_tenant()
    model.script_chat([ChatStep.text("Noted.")])
    model.delay_next(3.0, path="/v1/chat/completions")
    with serve_in_thread(create_app(online)) as url:
        async with _client(url, key_a) as a, _client(url, key_b) as b:
            chat = asyncio.create_task(a.post("/v1/chat", json={"user_id": USER, "message": "Hello there"}))
            # b's request goes in while a's waits for the model (or, on a slow machine, just before: a
            # hands its turn back as soon as its model call starts, 3 s before the answer comes).
            await asyncio.sleep(0.5)
            listed = await _served_while_pending(chat, b)
            assert listed.status_code == 200, listed.text
            answered = await chat
    assert answered.status_code == 200, answered.text
    assert answered.json()["answer"] == "Noted."


async def test_a_request_waiting_for_its_tenants_concurrency_slot_does_not_hold_the_worker(
    settings: Settings, new_tenant: NewTenant, app_engine: AsyncEngine, owner_engine: AsyncEngine
) -> None:
    tenant_a, key_a = await new_tenant()
    _, key_b = await new_tenant()
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant_a)})
        await conn.execute(
            text("INSERT INTO tenant_limits (tenant_id, concurrent_requests) VALUES (:t, 1)"), {"t": tenant_a}
        )
    app = create_app(settings.model_copy(update={"worker_slots": 1, "limit_queue_s": 3.0}))
    with serve_in_thread(app) as url:
        async with _client(url, key_a) as a, _client(url, key_b) as b, app_engine.connect() as holder:
            stored = await a.post(
                "/v1/memories", json={"user_id": USER, "content": "I keep bees on the roof."}
            )
            assert stored.status_code == 201, stored.text
            # Another process's request holds tenant a's one concurrency slot.
            await holder.begin()
            await holder.execute(text("SELECT pg_advisory_xact_lock(hashtext(:t), 1)"), {"t": str(tenant_a)})
            waiting = asyncio.create_task(a.get("/v1/memories", params={"user_id": USER}))
            await asyncio.sleep(0.3)  # a's request is in its slot's wait loop by now
            listed = await _served_while_pending(waiting, b)
            assert listed.status_code == 200, listed.text
            await holder.rollback()  # the slot frees: a's request goes on
            served = await waiting
    assert served.status_code == 200, served.text
    # The transaction it waited in was given back; the one it read in was bound to tenant a again.
    assert [m["content"] for m in served.json()["items"]] == ["I keep bees on the roof."]


async def test_an_open_event_stream_holds_no_turn_of_the_worker(
    settings: Settings, new_tenant: NewTenant
) -> None:
    (_, key_a), (_, key_b) = await new_tenant(), await new_tenant()
    app = create_app(settings.model_copy(update={"worker_slots": 1, "limit_queue_s": 3.0}))
    with serve_in_thread(app) as url:
        async with (
            _client(url, key_a) as a,
            _client(url, key_b) as b,
            a.stream("GET", "/v1/events/stream") as stream,
        ):
            assert stream.status_code == 200
            for _ in range(3):  # the stream stays open while other requests are served
                listed = await b.get("/v1/memories", params={"user_id": USER})
                assert listed.status_code == 200, listed.text
                mine = await a.get("/v1/memories", params={"user_id": USER})
                assert mine.status_code == 200, mine.text


async def test_a_request_waiting_for_the_workers_turn_has_run_no_statement_and_holds_no_connection(
    settings: Settings, new_tenant: NewTenant, owner_engine: AsyncEngine
) -> None:
    """Its key and its tenant's bucket are one statement on the limits' own pool; the request's
    transaction begins only with its turn, so a queue of waiting requests holds none of the pool (and
    costs no transaction begun and rolled back each). One worker turn, held by a remember that waits on
    its slot's lock (taken here as another process's write would hold it)."""
    tenant, key = await new_tenant()
    slot = slot_lock_key(str(tenant), USER, None, "home city", "fact")
    app = create_app(settings.model_copy(update={"worker_slots": 1, "limit_queue_s": 10.0}))
    engine: AsyncEngine = app.state.engine
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    with serve_in_thread(app) as url:
        async with _client(url, key) as a, owner_engine.connect() as holder:
            await holder.begin()
            await holder.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": slot})
            fact = {"user_id": USER, "content": "I live in Lisbon", "type": "fact", "subject": "home city"}
            writing = asyncio.create_task(a.post("/v1/memories", json=fact))
            await asyncio.sleep(0.5)  # the remember has the turn and waits on the lock
            event.listen(engine.sync_engine, "before_cursor_execute", record)
            try:
                waiting = asyncio.create_task(a.get("/v1/memories", params={"user_id": USER}))
                await asyncio.sleep(0.5)
                assert not writing.done()
                assert not waiting.done()
                assert statements == []  # nothing on the service's pool for the waiting request
                assert engine.pool.checkedout() == 1  # type: ignore[attr-defined]  # the remember's
                await holder.rollback()
                written, listed = await writing, await waiting
            finally:
                event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert written.status_code == 201, written.text
    assert listed.status_code == 200, listed.text
    assert [m["content"] for m in listed.json()["items"]] == ["I live in Lisbon"]
