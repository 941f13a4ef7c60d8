"""Every secret of the redaction corpus, written through every path that takes text, appears nowhere:
not in any text column of any table (found through information_schema), not in the logs (structlog and
stdlib), not in any response (traces and errors included), not in the JSON or Markdown export. And the
corpus's harmless look-alikes (ids, hashes, versions, credential words) go through the API untouched.

A new write path is one entry in WRITE_PATHS: a function that sends each sentence through it.
"""

from __future__ import annotations

import io
import logging
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.conftest import Api
from tests.support.redaction_corpus import LOOKALIKES, SECRETS, render
from tests.support.scan import scan_text_columns

USER = "redaction-user"
SENTENCES = [render(case) for case in SECRETS.values()]
NEEDLES = [case.secret for case in SECRETS.values()]
Write = Callable[[Api, list[str]], Awaitable[list[httpx.Response]]]


def ok(response: httpx.Response) -> httpx.Response:
    assert response.status_code < 300, response.text[:500]
    return response


async def via_remember(api: Api, sentences: list[str]) -> list[httpx.Response]:
    return [
        ok(await api.post("/v1/memories", {"user_id": USER, "content": s, "summary": s})) for s in sentences
    ]


async def via_batch(api: Api, sentences: list[str]) -> list[httpx.Response]:
    items = [{"user_id": USER, "content": s, "tags": [s] if len(s) <= 100 else []} for s in sentences]
    return [ok(await api.post("/v1/memories/batch", {"items": items}))]


async def via_patch(api: Api, sentences: list[str]) -> list[httpx.Response]:
    created = await api.remember(user_id=USER, content="a harmless note to be edited")
    path = f"/v1/memories/{created['memory']['id']}"
    out = []
    for s in sentences:
        short = s if len(s) <= 100 else "tag"
        out.append(ok(await api.patch(path, {"content": s, "tags": [short]})))
        out.append(ok(await api.patch(path, {"subject": s[:200]})))
    return out


def import_document(sentences: list[str]) -> dict[str, Any]:
    memories, events = [], []
    for s in sentences:
        mid = str(uuid.uuid4())
        tags = [s] if len(s) <= 100 else []
        memory = {"id": mid, "user_id": USER, "type": "fact", "status": "active", "content": s}
        memories.append({**memory, "summary": s, "tags": tags, "subject": s[:200]})
        details = {"note": s, "nested": [{"password": "hunter2"}]}
        event = {"memory_id": mid, "user_id": USER, "kind": "created", "actor": "elsewhere", "reason": s}
        events.append({**event, "details": details, "created_at": "2026-01-01T00:00:00Z"})
    proposal = {"id": str(uuid.uuid4()), "user_id": USER, "kind": "merge", "status": "proposed"}
    proposal |= {"target_ids": [memories[0]["id"]], "rationale": " ".join(sentences)}
    proposal |= {"payload": {"merged": sentences}, "created_at": "2026-01-01T00:00:00Z"}
    header = {"version": 1, "exported_at": "2026-01-01T00:00:00Z"}
    return {**header, "memories": memories, "events": events, "proposals": [proposal]}


async def via_import(api: Api, sentences: list[str]) -> list[httpx.Response]:
    return [ok(await api.post("/v1/import", import_document(sentences)))]


async def via_recall_query(api: Api, sentences: list[str]) -> list[httpx.Response]:
    await api.remember(user_id=USER, content="the deploy key lives in the vault")
    return [
        ok(await api.post("/v1/recall", {"user_id": USER, "query": s, "min_relevance": 0})) for s in sentences
    ]


async def via_chat(api: Api, sentences: list[str]) -> list[httpx.Response]:
    out = []
    for s in sentences:
        out.append(ok(await api.post("/v1/chat", {"user_id": USER, "message": s, "session_id": "s"})))
        out.append(ok(await api.post("/v1/chat", {"user_id": USER, "message": f"Remember: {s}"})))
    return out


async def via_extract(api: Api, sentences: list[str]) -> list[httpx.Response]:
    out = []
    for s in sentences:
        messages = [
            {"role": "user", "content": f"Please remember that {s}"},
            {"role": "assistant", "content": s},
        ]
        out.append(ok(await api.post("/v1/memories/extract", {"user_id": USER, "messages": messages})))
    return out


async def via_rejected_requests(api: Api, sentences: list[str]) -> list[httpx.Response]:
    """Bad requests that carry a secret: the error (and its log line) must not echo it."""
    out = []
    for s in sentences:
        for path, body in (
            ("/v1/memories", {"user_id": USER, "content": s, "importance": 5}),
            ("/v1/memories", {"user_id": USER, "content": s, "type": s[:50]}),
            ("/v1/recall", {"user_id": USER, "query": s, "token_budget": 0}),
            ("/v1/import", {"version": 1, "exported_at": s, "memories": []}),
        ):
            response = await api.post(path, body)
            assert response.status_code in (400, 422), response.text[:300]
            out.append(response)
        out.append(await api.get("/v1/memories", user_id=USER, status=s[:100]))
    return out


WRITE_PATHS: dict[str, Write] = {
    "remember": via_remember,
    "batch": via_batch,
    "patch": via_patch,
    "import": via_import,
    "recall": via_recall_query,
    "chat": via_chat,
    "extract": via_extract,
    "rejected": via_rejected_requests,
}

STORES_NOTHING = {"recall", "rejected"}  # the text is only read (a query) or refused


async def read_everything(api: Api) -> list[str]:
    """What a client can read back: listings, exports (JSON, Markdown, whole tenant), a traced recall."""
    texts = [(await api.get("/v1/memories", user_id=USER, limit=500)).text]
    texts.append((await api.get("/v1/export", user_id=USER)).text)
    texts.append((await api.get("/v1/export", user_id=USER, format="markdown")).text)
    texts.append((await api.get("/v1/export")).text)
    recall = {"user_id": USER, "query": "key token password secret card url", "min_relevance": 0}
    texts.append(
        (await api.post("/v1/recall", {**recall, "include_sensitive": True, "token_budget": 32768})).text
    )
    texts.append((await api.get("/v1/stats", user_id=USER)).text)
    return texts


@pytest.mark.parametrize("path", list(WRITE_PATHS))
async def test_no_secret_survives_any_write_path(
    api: Api,
    owner_engine: AsyncEngine,
    path: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = io.StringIO()
    monkeypatch.setattr(sys, "stderr", sink)  # structlog writes to the current sys.stderr
    caplog.set_level(logging.DEBUG)  # and every stdlib logger (litestar, sqlalchemy, httpx, ...)
    responses = await WRITE_PATHS[path](api, SENTENCES)
    readable = [r.text for r in responses] + await read_everything(api)
    if path not in STORES_NOTHING:
        assert "[REDACTED:" in "".join(readable)  # the secrets did go somewhere, redacted
    # httpx is the test's own client (it logs the URLs it sends); everything else is the service.
    service = [caplog.handler.format(r) for r in caplog.records if not r.name.startswith("httpx")]
    # The service's JSON stream carries the standard library's records too (app/lib/logging.py), the
    # test client's among them: those are left out the same way.
    lines = [line for line in sink.getvalue().splitlines() if '"logger": "httpx"' not in line]
    logs = "\n".join(lines) + "\n" + "\n".join(service)
    assert '"event": "request"' in logs or '"event":"request"' in logs  # the sink saw the access log

    leaks = [f"response: {n}" for n in NEEDLES for t in readable if n.lower() in t.lower()]
    leaks += [f"log: {n}" for n in NEEDLES if n.lower() in logs.lower()]
    scan = await scan_text_columns(owner_engine, api.tenant_id, NEEDLES)
    leaks += [f"database {hit}" for hit in scan.hits]
    assert leaks == [], sorted(set(leaks))[:20]
    if path not in STORES_NOTHING:
        assert scan.rows["memories"] > 0


async def lookalikes_via_remember(api: Api, items: list[dict[str, str]]) -> list[dict[str, Any]]:
    return [ok(await api.post("/v1/memories", item)).json() for item in items]


async def lookalikes_via_batch(api: Api, items: list[dict[str, str]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = ok(await api.post("/v1/memories/batch", {"items": items})).json()[
        "results"
    ]
    return results


@pytest.mark.parametrize("path", ["remember", "batch"])
async def test_harmless_look_alikes_are_stored_unchanged_and_not_flagged(api: Api, path: str) -> None:
    """The unit tests check the look-alikes through `redact`; this checks what the API stores and says.
    One user per look-alike, so no two of them meet in a slot (a supersession or a deduplication)."""
    items = [
        {"user_id": f"lookalike-{name}", "content": text, "summary": text}
        for name, text in LOOKALIKES.items()
    ]
    send = lookalikes_via_remember if path == "remember" else lookalikes_via_batch
    results = await send(api, items)
    changed = []
    for (name, text), result in zip(LOOKALIKES.items(), results, strict=True):
        stored = await api.memory(result["memory"]["id"])  # read back from the database
        seen = (result["redacted"], result["memory"]["content"], stored["content"], stored["summary"])
        if seen != (False, text, text, text):
            changed.append(f"{name}: {seen}")
    assert changed == []
