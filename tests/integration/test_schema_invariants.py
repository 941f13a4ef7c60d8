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
        await conn.execute(text("CREATE TABLE invariant_probe.orphans (id uuid PRIMARY KEY)"))
        await conn.execute(
            text(
                "CREATE TABLE invariant_probe.notes (tenant_id uuid NOT NULL, id uuid NOT NULL,"
                " slug text, parent_id uuid, PRIMARY KEY (id, tenant_id), UNIQUE (slug),"
                " FOREIGN KEY (tenant_id) REFERENCES invariant_probe.tenants (id),"
                " CONSTRAINT notes_parent FOREIGN KEY (parent_id) REFERENCES invariant_probe.orphans (id),"
                # Leads with tenant_id, but into a table not distributed by it: not colocated.
                " CONSTRAINT notes_astray FOREIGN KEY (tenant_id) REFERENCES invariant_probe.orphans (id))"
            )
        )
        await conn.execute(text("CREATE INDEX notes_by_slug ON invariant_probe.notes (slug, tenant_id)"))
        await conn.execute(text("CREATE INDEX notes_fine ON invariant_probe.notes (tenant_id, slug)"))
        found = await violations(conn, "invariant_probe")
        await tx.rollback()
    assert {(v.table, v.what) for v in found} == {
        ("notes", "primary key"),
        ("notes", "unique index"),
        ("notes", "btree index"),
        ("notes", "foreign key"),
        ("orphans", "table neither distributed (no tenant_id) nor a reference table"),
    }
    assert Violation("notes", "primary key", "notes_pkey", ("id", "tenant_id")) in found
    # The key whose columns do not start with tenant_id and the one into a table not distributed by it;
    # the one to the reference table tenants is fine.
    assert sorted(v.name for v in found if v.what == "foreign key") == ["notes_astray", "notes_parent"]
    assert Violation("notes", "foreign key", "notes_parent", ("parent_id",)) in found


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
    "spaces",
    "space_grants",
    "tenant_limits",
)
LONG = " ".join(f"Step {i} of the runbook: check the disk, then restart the worker." for i in range(30))
_TABLE = re.compile(r"\b(" + "|".join(TENANT_TABLES) + r")\b")
# A comparison on tenant_id (WHERE, JOIN ... ON, = ANY, IN), or tenant_id among an INSERT's columns. Merely
# naming it is not enough: an ORM select lists every column, tenant_id too, whatever it filters on.
_FILTERS = re.compile(r"\btenant_id\s*(=|IN\b)", re.I)
_WRITES = re.compile(r"\bINSERT INTO \w+\s*\([^)]*\btenant_id\b", re.I)


async def call(client: AsyncTestClient[Any], h: dict[str, str], method: str, path: str, body: Any) -> Any:
    kwargs = {"json": body} if body is not None else {}
    response = await getattr(client, method)(path, headers=h, **kwargs)
    assert response.status_code < 300, (path, response.text)
    return response.json()


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
        agents = (
            await client.post(
                "/v1/memories",
                json={"user_id": "u", "content": "The launch codename is Bluebird", "agent_id": "agent-a"},
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
            # Shared spaces: create, grant, list, promote (applied at once, and pending), recall through a
            # grant, revoke.
            ("post", "/v1/spaces", {"name": "launch", "auto_approve": True}),
            ("post", "/v1/spaces", {"name": "review"}),
            ("post", "/v1/spaces/launch/grants", {"agent_id": "agent-a"}),
            ("post", "/v1/spaces/launch/grants", {"agent_id": "agent-b"}),
            ("post", "/v1/spaces/review/grants", {"agent_id": "agent-a"}),
            ("get", "/v1/spaces", None),
            ("post", "/v1/spaces/launch/promotions", {"memory_id": agents, "agent_id": "agent-a"}),
            ("post", "/v1/spaces/review/promotions", {"memory_id": agents, "agent_id": "agent-a"}),
            ("post", "/v1/recall", {"user_id": "u", "query": "the launch codename?", "agent_id": "agent-b"}),
            ("delete", "/v1/spaces/launch/grants/agent-b", None),
        ]
        answers = [await call(client, h, method, path, body) for method, path, body in calls]
        # The pending promotion approved (a person's decision writes into the space), then the erase.
        pending = answers[-3]
        assert pending["status"] == "proposed", pending
        await call(client, h, "post", f"/v1/dream/proposals/{pending['id']}/approve", None)
        await call(client, h, "post", "/v1/users/u/erase", {})
    touching = [s for s in statements if _TABLE.search(s)]
    assert len(touching) > 30
    # Every tenant table was reached: a table no call touches would pass the check below unchecked. But
    # tenant_limits: requests reach it only inside engram_admit (a function, on the limiter's own engine),
    # and `engram tenant limits` (the CLI) reads and writes it, by tenant_id (app/store/limits.py).
    assert {t for s in touching for t in _TABLE.findall(s)} == set(TENANT_TABLES) - {"tenant_limits"}
    unfiltered = [s for s in touching if not _FILTERS.search(s) and not _WRITES.search(s)]
    assert unfiltered == []
    # Keys are looked up through engram_authenticate (SECURITY DEFINER), never read by the service role.
    assert not any(re.search(rf"\b{t}\b", s) for s in statements for t in REFERENCE_TABLES)
