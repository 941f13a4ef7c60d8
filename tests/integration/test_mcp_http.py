"""`/mcp` over streamable HTTP, through the official MCP SDK's client against the served app."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.agent.catalogue import CATALOGUE
from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import NewTenant
from tests.support.database import TestDatabase
from tests.support.live_server import LiveServer
from tests.support.mcp_client import NEXTJS, QUESTION, REACT, mcp_over_http, structured, tool_error
from tests.support.served import free_port, serve_env, serving, wait_ready

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served(settings: Settings) -> Iterator[str]:
    with LiveServer(create_app(settings), name="engram-mcp") as server:
        yield server.url


async def test_lists_every_catalogue_tool_with_its_schema(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    async with mcp_over_http(served, key) as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == [t.name for t in CATALOGUE]
    for tool, entry in zip(listed, CATALOGUE, strict=True):
        assert tool.description == entry.description
        assert tool.input_schema == entry.input_schema()


async def test_frontend_case_over_http_recalls_nextjs_not_react(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    async with mcp_over_http(served, key, user="alice") as client:
        react = structured(await client.call_tool("remember", REACT))
        nextjs = structured(await client.call_tool("remember", NEXTJS))
        assert nextjs["action"] == "superseded"
        assert nextjs["superseded"] == [react["id"]]
        recall = structured(await client.call_tool("recall", QUESTION))
        history = structured(await client.call_tool("history", {"memory_id": react["id"]}))
    assert "Next.js" in recall["context"]
    assert "React" not in recall["context"]
    assert [m["id"] for m in recall["memories"]] == [nextjs["id"]]
    assert recall["trace"]["included"] == 1
    assert [v["id"] for v in history["versions"]] == [nextjs["id"], react["id"]]
    assert {v["user_id"] for v in history["versions"]} == {"alice"}


async def test_the_session_user_scopes_every_tool(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    async with mcp_over_http(served, key, user="alice") as alice:
        written = structured(await alice.call_tool("remember", REACT))
    async with mcp_over_http(served, key) as default_user:
        recall = structured(await default_user.call_tool("recall", QUESTION))
        history = tool_error(await default_user.call_tool("history", {"memory_id": written["id"]}))
    assert recall["memories"] == []
    assert history["error"] == "not_found"


async def test_second_tenant_sees_nothing_of_the_first(served: str, new_tenant: NewTenant) -> None:
    _, first = await new_tenant()
    _, second = await new_tenant()
    async with mcp_over_http(served, first, user="alice") as a:
        written = structured(await a.call_tool("remember", REACT))
        assert structured(await a.call_tool("stats", {}))["total"] == 1
    async with mcp_over_http(served, second, user="alice") as b:
        recall = structured(await b.call_tool("recall", QUESTION))
        history = tool_error(await b.call_tool("history", {"memory_id": written["id"]}))
        export = structured(await b.call_tool("export", {}))
        stats = structured(await b.call_tool("stats", {}))
        timeline = structured(await b.call_tool("timeline", {}))
        forget = tool_error(await b.call_tool("forget", {"memory_id": written["id"]}))
        proposals = structured(await b.call_tool("list_proposals", {}))
        dream = structured(await b.call_tool("dream", {}))
    assert recall["memories"] == []
    assert recall["context"] == ""
    assert history["error"] == "not_found"
    assert export["document"]["memories"] == []
    assert export["document"]["events"] == []
    assert stats["total"] == 0
    assert timeline["items"] == []
    assert forget["error"] == "not_found"
    assert proposals["items"] == []
    assert dream["proposals"] == []
    async with mcp_over_http(served, first, user="alice") as a:  # still there, untouched
        again = structured(await a.call_tool("recall", QUESTION))
    assert [m["id"] for m in again["memories"]] == [written["id"]]


async def stamp() -> str:
    """Now, between two ticks: an instant strictly after the writes before it and before those after."""
    await asyncio.sleep(0.02)
    now = datetime.now(UTC).isoformat()
    await asyncio.sleep(0.02)
    return now


async def test_second_tenant_as_the_same_agent_recalls_nothing_of_the_first_at_any_instant(
    served: str, new_tenant: NewTenant
) -> None:
    _, first = await new_tenant()
    _, second = await new_tenant()
    agent = {"X-Engram-Agent": "agent-a"}
    async with mcp_over_http(served, first, user="alice", headers=agent) as a:
        react = structured(await a.call_tool("remember", REACT))
        between = await stamp()
        nextjs = structured(await a.call_tool("remember", NEXTJS))
    async with mcp_over_http(served, second, user="alice", headers=agent) as b:
        own = structured(
            await b.call_tool("remember", {**REACT, "content": "We build the frontend in Svelte"})
        )
        after = await stamp()
        seen = {
            (at, kind): structured(
                await b.call_tool(
                    "recall", {**QUESTION, "as_of": at, "as_of_kind": kind, "token_budget": 4000}
                )
            )
            for at in (between, after)
            for kind in ("valid", "recorded")
        }
    for (at, kind), recall in seen.items():
        assert [m["id"] for m in recall["memories"]] == ([own["id"]] if at == after else []), (at, kind)
        assert "React" not in recall["context"]
        assert "Next.js" not in recall["context"]
    # The first tenant's agent does recall its own at those instants: the empty answers mean something.
    async with mcp_over_http(served, first, user="alice", headers=agent) as a:
        then = structured(
            await a.call_tool("recall", {**QUESTION, "as_of": between, "as_of_kind": "recorded"})
        )
        now = structured(await a.call_tool("recall", {**QUESTION, "as_of": after}))
    assert [m["id"] for m in then["memories"]] == [react["id"]]
    assert nextjs["superseded"] == [react["id"]]
    # Still current after the second tenant wrote into the same user's slot as the same agent.
    assert [m["id"] for m in now["memories"]] == [nextjs["id"]]


async def test_bad_arguments_are_tool_errors_and_write_nothing(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    bad: list[tuple[str, dict[str, Any], str]] = [
        ("remember", {"content": ""}, "validation_error"),
        ("remember", {"content": "a\x00b"}, "validation_error"),
        ("remember", {"content": 42}, "validation_error"),
        ("recall", {"query": "x", "token_budget": 0}, "validation_error"),
        ("history", {"memory_id": "not-a-uuid"}, "validation_error"),
        ("history", {"memory_id": "7d0f7a3e-4a43-4c1e-9d1a-000000000000"}, "not_found"),
        ("approve_proposal", {"proposal_id": "7d0f7a3e-4a43-4c1e-9d1a-000000000000"}, "not_found"),
        ("import", {"document": {"version": 99}}, "validation_error"),
        ("no_such_tool", {}, "validation_error"),
    ]
    async with mcp_over_http(served, key) as client:
        for name, arguments, code in bad:
            error = tool_error(await client.call_tool(name, arguments))
            assert error["error"] == code, (name, arguments, error)
        stats = structured(await client.call_tool("stats", {}))
    assert stats["total"] == 0


def _post(url: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=30)


async def test_no_key_or_a_wrong_key_is_a_401(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    assert _post(served, {}).status_code == 401
    assert _post(served, {"Authorization": "Bearer egm_not_a_real_key"}).status_code == 401
    assert _post(served, {"Authorization": "Basic abc"}).status_code == 401
    assert _post(served, {"Authorization": f"Bearer {key}x"}).status_code == 401
    assert _post(served, {"Authorization": f"Bearer {key}"}).status_code == 200


async def test_a_host_or_origin_not_allowed_is_refused(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    auth = {"Authorization": f"Bearer {key}"}
    assert _post(served, {**auth, "Host": "evil.example"}).status_code == 421
    assert _post(served, {**auth, "Origin": "http://evil.example"}).status_code == 403
    assert _post(served, {**auth, "Origin": "http://localhost:3000"}).status_code == 200


async def test_a_bad_user_is_a_tool_error(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    async with mcp_over_http(served, key, user="u" * 201) as client:
        long = tool_error(await client.call_tool("stats", {}))
    async with mcp_over_http(served, key, query="?user_id=%20%20") as client:
        blank = tool_error(await client.call_tool("stats", {}))
    assert long["error"] == blank["error"] == "validation_error"


async def test_two_workers_serve_mcp(database: TestDatabase, tmp_path: Path, new_tenant: NewTenant) -> None:
    """Stateless: each request may reach either worker, and a client never notices."""
    _, key = await new_tenant()
    port = free_port()
    env = serve_env(database, tmp_path, ENGRAM_EMBEDDER="hash")
    base = f"http://127.0.0.1:{port}"
    with serving(["--port", str(port), "--workers", "2"], env, tmp_path) as process:
        wait_ready(port, process)
        async with mcp_over_http(base, key, user="alice") as client:
            react = structured(await client.call_tool("remember", REACT))
            nextjs = structured(await client.call_tool("remember", NEXTJS))
            recalls = [structured(await client.call_tool("recall", QUESTION)) for _ in range(10)]
        async with httpx.AsyncClient(timeout=5) as plain:
            scraped = (await plain.get(f"{base}/metrics")).text
    assert nextjs["superseded"] == [react["id"]]
    for recall in recalls:
        assert [m["id"] for m in recall["memories"]] == [nextjs["id"]]
    routes = {
        s.labels["route"]
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
        if s.name == "engram_http_requests_total"
    }
    assert "/mcp" in routes


async def test_dream_approve_and_apply_over_mcp_for_the_session_user_only(
    served: str, new_tenant: NewTenant
) -> None:
    _, key = await new_tenant()
    coffee = {"content": "I drink coffee every morning", "type": "preference", "subject": "coffee"}
    again = {"content": "Every morning I drink coffee", "type": "preference", "subject": "morning routine"}
    async with mcp_over_http(served, key, user="u") as client:
        a = structured(await client.call_tool("remember", coffee))
        b = structured(await client.call_tool("remember", again))
        dreamt = structured(await client.call_tool("dream", {}))
        [merge] = [p for p in dreamt["proposals"] if p["kind"] == "merge"]
        assert sorted(merge["target_ids"]) == sorted([a["id"], b["id"]])
        async with mcp_over_http(served, key, user="someone-else") as other:
            refused = tool_error(await other.call_tool("approve_proposal", {"proposal_id": merge["id"]}))
            nothing = structured(await other.call_tool("apply", {}))
        approved = structured(await client.call_tool("approve_proposal", {"proposal_id": merge["id"]}))
        async with mcp_over_http(served, key, user="someone-else") as other:
            stolen = tool_error(await other.call_tool("apply", {"proposal_ids": [merge["id"]]}))
        report = structured(await client.call_tool("apply", {"proposal_ids": [merge["id"]]}))
        listed = structured(await client.call_tool("list_proposals", {"status": "applied"}))
        again_rejected = tool_error(await client.call_tool("reject_proposal", {"proposal_id": merge["id"]}))
        recall = structured(await client.call_tool("recall", {"query": "coffee in the morning"}))
    assert refused["error"] == "not_found"
    assert nothing["applied"] == 0
    assert stolen["error"] == "not_found"
    assert approved["proposal"]["status"] == "approved"
    assert (report["applied"], report["merged"]) == (1, 1)
    assert [p["id"] for p in listed["items"]] == [merge["id"]]
    assert again_rejected["error"] == "conflict"
    assert [m["id"] for m in recall["memories"]] == [report["results"][0]["memory_id"]]


async def test_export_from_one_tenant_imports_into_another(served: str, new_tenant: NewTenant) -> None:
    _, first = await new_tenant()
    _, second = await new_tenant()
    async with mcp_over_http(served, first, user="alice") as a:
        structured(await a.call_tool("remember", REACT))
        structured(await a.call_tool("remember", NEXTJS))
        exported = structured(await a.call_tool("export", {}))["document"]
    async with mcp_over_http(served, second, user="alice") as b:
        imported = structured(await b.call_tool("import", {"document": exported}))
        recall = structured(await b.call_tool("recall", QUESTION))
        timeline = structured(await b.call_tool("timeline", {"limit": 5}))
    assert imported["imported"] == 2
    assert "Next.js" in recall["context"]
    assert "React" not in recall["context"]
    assert timeline["items"]


async def test_malformed_requests_are_4xx_never_500(served: str, new_tenant: NewTenant) -> None:
    _, key = await new_tenant()
    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=served, timeout=30) as plain:
        statuses = [
            (await plain.post("/mcp", content=b"{not json", headers={**MCP_HEADERS, **auth})).status_code,
            (await plain.post("/mcp", content=b"[]", headers={**MCP_HEADERS, **auth})).status_code,
            (
                await plain.post("/mcp", json=INITIALIZE, headers={**auth, "Content-Type": "text/plain"})
            ).status_code,
            (await plain.get("/mcp", headers={**MCP_HEADERS, **auth})).status_code,
            (await plain.delete("/mcp", headers={**MCP_HEADERS, **auth})).status_code,
            (
                await plain.post("/mcp", content=b"x" * (2 * 1024 * 1024), headers={**MCP_HEADERS, **auth})
            ).status_code,
        ]
    assert all(400 <= s < 500 for s in statuses), statuses
