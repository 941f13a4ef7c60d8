"""Citus-readiness: the schema leads every key with tenant_id, and every tenant query filters on it."""

from __future__ import annotations

import re
from typing import Any

from litestar.testing import AsyncTestClient
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import NewTenant
from tests.support.schema_invariants import REFERENCE_TABLES, Violation, violations


async def test_every_key_and_btree_index_of_a_tenant_table_starts_with_tenant_id(
    owner_engine: AsyncEngine,
) -> None:
    async with owner_engine.connect() as conn:
        assert await violations(conn) == []


async def test_the_check_fails_on_a_tenant_table_whose_keys_do_not_start_with_tenant_id(
    owner_engine: AsyncEngine,
) -> None:
    async with owner_engine.connect() as conn, conn.begin() as tx:
        await conn.execute(text("CREATE SCHEMA invariant_probe"))
        await conn.execute(text("CREATE TABLE invariant_probe.tenants (id uuid PRIMARY KEY)"))
        await conn.execute(
            text(
                "CREATE TABLE invariant_probe.notes (tenant_id uuid NOT NULL, id uuid NOT NULL,"
                " slug text, PRIMARY KEY (id, tenant_id), UNIQUE (slug),"
                " FOREIGN KEY (tenant_id) REFERENCES invariant_probe.tenants (id))"
            )
        )
        await conn.execute(text("CREATE INDEX notes_by_slug ON invariant_probe.notes (slug, tenant_id)"))
        await conn.execute(text("CREATE INDEX notes_fine ON invariant_probe.notes (tenant_id, slug)"))
        await conn.execute(text("CREATE TABLE invariant_probe.orphans (id uuid PRIMARY KEY)"))
        found = await violations(conn, "invariant_probe")
        await tx.rollback()
    assert {(v.table, v.what) for v in found} == {
        ("notes", "primary key"),
        ("notes", "unique index"),
        ("notes", "btree index"),
        ("orphans", "table neither distributed (no tenant_id) nor a reference table"),
    }
    assert Violation("notes", "primary key", "notes_pkey", ("id", "tenant_id")) in found


TENANT_TABLES = (
    "memories",
    "memory_access",
    "memory_passages",
    "memory_events",
    "dream_proposals",
    "messages",
    "usage_events",
    "webhooks",
    "webhook_deliveries",
)
LONG = " ".join(f"Step {i} of the runbook: check the disk, then restart the worker." for i in range(30))
_TABLE = re.compile(r"\b(" + "|".join(TENANT_TABLES) + r")\b")


async def test_every_statement_on_a_tenant_table_filters_or_writes_tenant_id(
    settings: Settings, new_tenant: NewTenant
) -> None:
    statements: list[str] = []
    app = create_app(settings.model_copy(update={"reinforce_interval_s": 0.0}))

    def record(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    engine: AsyncEngine = app.state.engine
    event.listen(engine.sync_engine, "before_cursor_execute", record)
    _, key = await new_tenant()
    h = {"Authorization": f"Bearer {key}"}
    async with AsyncTestClient(app=app) as client:
        first = (
            await client.post(
                "/v1/memories",
                json={"user_id": "u", "content": "I drink coffee", "subject": "drink"},
                headers=h,
            )
        ).json()["memory"]["id"]
        calls: list[tuple[str, str, Any]] = [
            ("post", "/v1/memories", {"user_id": "u", "content": "I live in Porto", "subject": "city"}),
            ("post", "/v1/memories", {"user_id": "u", "content": "I live in Lisbon", "subject": "city"}),
            ("post", "/v1/memories/batch", {"items": [{"user_id": "u", "content": "I like tea"}]}),
            ("post", "/v1/memories", {"user_id": "u", "content": LONG}),
            ("patch", f"/v1/memories/{first}", {"content": LONG + " Tea is served at four."}),
            ("post", "/v1/recall", {"user_id": "u", "query": "where do I live?"}),
            ("get", "/v1/memories?user_id=u", None),
            ("get", f"/v1/memories/{first}/history", None),
            ("patch", f"/v1/memories/{first}", {"importance": 0.9}),
            ("post", f"/v1/memories/{first}/pin", None),
            ("post", "/v1/chat", {"user_id": "u", "message": "I prefer green tea"}),
            (
                "post",
                "/v1/memories/extract",
                {"user_id": "u", "messages": [{"role": "user", "content": "I am vegan"}]},
            ),
            ("post", "/v1/forget", {"user_id": "u", "subject": "city"}),
            ("get", "/v1/stats?user_id=u", None),
            ("get", "/v1/timeline?user_id=u", None),
            ("get", "/v1/usage?user_id=u", None),
            ("post", "/v1/dream", {"user_id": "u"}),
            ("get", "/v1/dream/proposals?user_id=u", None),
            ("get", "/v1/export?user_id=u", None),
            # A kind this test never records: nothing is queued for the (unreachable) address.
            ("post", "/v1/webhooks", {"url": "https://93.184.215.14/hook", "event_types": ["reembedded"]}),
            ("get", "/v1/webhooks", None),
            ("get", "/v1/webhooks/dead-letters", None),
            ("post", "/v1/users/u/erase", {}),
        ]
        for method, path, body in calls:
            kwargs = {"json": body} if body is not None else {}
            response = await getattr(client, method)(path, headers=h, **kwargs)
            assert response.status_code < 300, (path, response.text)
    touching = [s for s in statements if _TABLE.search(s)]
    assert len(touching) > 30
    unfiltered = [s for s in touching if "tenant_id" not in s]
    assert unfiltered == []
    # Keys are looked up through engram_authenticate (SECURITY DEFINER), never read by the service role.
    assert not any(re.search(rf"\b{t}\b", s) for s in statements for t in REFERENCE_TABLES)
