"""`GET /metrics`: every listed series after real traffic, and no tenant, user or content in any label."""

from __future__ import annotations

import uuid
from typing import Any

from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families

from app.lib.settings import Settings
from tests.conftest import Api, running_client

SERIES = {
    "engram_http_requests_total",
    "engram_http_request_duration_seconds_bucket",
    "engram_http_requests_in_flight",
    "engram_errors_total",
    "engram_recall_stage_seconds_bucket",
    "engram_recall_candidates_bucket",
    "engram_recall_memories_bucket",
    "engram_recall_tokens_used_bucket",
    "engram_recalls_total",
    "engram_model_calls_total",
    "engram_model_tokens_total",
    "engram_model_call_duration_seconds_bucket",
    "engram_db_pool_connections_in_use",
    "engram_db_pool_size",
}
# The stages a recall times (app/memory/recall.py); "total" spans them all.
STAGES = ("embed", "sql", "score", "pack", "reinforce", "total")


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


async def test_metrics_list_every_series_after_a_remember_and_a_recall(settings: Settings, api: Api) -> None:
    # An app of its own: the counts below are this test's alone.
    async with running_client(settings) as client:
        own = Api(client, api.key, api.tenant_id)
        secret_user = f"user-{uuid.uuid4().hex}"
        content = f"The deploy freeze starts on Friday {uuid.uuid4().hex}"
        memory = (await own.remember(user_id=secret_user, content=content, subject="deploy freeze"))["memory"]
        recall = await own.recall(user_id=secret_user, query="when does the deploy freeze start?")
        assert recall["memories"], recall
        assert (await own.get(f"/v1/memories/{memory['id']}")).status_code == 200
        assert (await own.post("/v1/recall", {"user_id": secret_user})).status_code == 422
        chat = await own.post("/v1/chat", {"user_id": secret_user, "message": "I prefer green tea"})
        assert chat.status_code == 200, chat.text

        response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found = samples(response.text)
    assert {name for name, _, _ in found} >= SERIES

    def value(name: str, **labels: str) -> float:
        return sum(v for n, ls, v in found if n == name and labels.items() <= ls.items())

    assert value("engram_http_requests_total", route="/v1/memories", status="201") == 1
    assert value("engram_http_requests_total", route="/v1/recall", status="200") == 1
    assert value("engram_http_requests_total", route="/v1/memories/{memory_id}", status="200") == 1
    assert value("engram_errors_total", code="validation_error", status="422") == 1
    assert value("engram_recalls_total", plan="exact") == 2  # the recall and the chat's recall
    # Every stage app/memory/recall.py times, once per recall (the recall and the chat's), and no other.
    stages = {ls["stage"] for n, ls, _ in found if n == "engram_recall_stage_seconds_count"}
    assert stages == set(STAGES)
    for stage in STAGES:
        assert value("engram_recall_stage_seconds_count", stage=stage) == 2, stage
    assert value("engram_recall_candidates_sum") >= 1
    assert value("engram_recall_tokens_used_sum") >= 1
    assert value("engram_model_calls_total", kind="chat", model="engram-offline-1") >= 1
    assert value("engram_model_calls_total", kind="embed") >= 3
    # Tokens by kind, model and direction: the chat's prompt and completion; the local embedder's calls
    # are metered too (their series exist; app/usage/metered.py counts them at zero tokens).
    tokens = {
        (ls["kind"], ls["model"], ls["direction"]) for n, ls, _ in found if n == "engram_model_tokens_total"
    }
    assert {direction for _, _, direction in tokens} == {"prompt", "completion"}
    assert {("chat", "engram-offline-1", "prompt"), ("chat", "engram-offline-1", "completion")} <= tokens
    assert {(kind, direction) for kind, _, direction in tokens if kind == "embed"} == {
        ("embed", "prompt"),
        ("embed", "completion"),
    }
    assert value("engram_model_tokens_total", kind="chat", direction="prompt") >= 1
    assert value("engram_model_tokens_total", kind="chat", direction="completion") >= 1
    assert value("engram_db_pool_size", pool="request") == settings.db_pool_size
    assert value("engram_db_pool_connections_in_use", pool="request") == 0  # nothing in flight now
    # The scrape itself is the one request in flight: each request counted once, however many layers of
    # the app's middleware (routed and unrouted) it passes.
    assert value("engram_http_requests_in_flight") == 1

    labels = {v for _, ls, _ in found for v in ls.values()}
    for private in (str(api.tenant_id), secret_user, memory["id"], "deploy freeze", "green tea"):
        assert not any(private in label for label in labels), private
    assert not any(label.startswith("/v1/memories/") and "{" not in label for label in labels)


async def test_metrics_need_no_key_and_show_nothing_of_another_tenant(
    client: AsyncTestClient[Any], api: Api, other_api: Api
) -> None:
    await api.remember(user_id="metrics-user", content="Alpha project uses Rust")
    text = (await client.get("/metrics")).text
    labels = {v for _, ls, _ in samples(text) for v in ls.values()}
    assert str(api.tenant_id) not in labels
    assert str(other_api.tenant_id) not in labels
    assert "metrics-user" not in text
    assert "Alpha project" not in text
