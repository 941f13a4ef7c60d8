"""The agent loop against a scripted OpenAI-compatible server, through the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client
from tests.support.scripted_openai import ChatStep, ScriptedOpenAI, ToolCall

CHAT_MODEL = "scripted-chat"
EMBED_MODEL = "scripted-embedding"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(embedding_dim=128) as s:
        yield s


def online_settings(settings: Settings, server: ScriptedOpenAI, **overrides: Any) -> Settings:
    return settings.model_copy(
        update={
            "openai_base_url": server.base_url,
            "openai_api_key": SecretStr("sk-test-key-for-the-scripted-server-0001"),
            "embedder": "openai",
            "chat_model": CHAT_MODEL,
            "embed_model": EMBED_MODEL,
            "embed_dim": 128,
            "model_max_retries": 2,
            "model_timeout_s": 2.0,
            **overrides,
        }
    )


@pytest.fixture
async def online(settings: Settings, server: ScriptedOpenAI, new_tenant: NewTenant) -> AsyncIterator[Api]:
    server.reset()
    tenant_id, key = await new_tenant()
    async with running_client(online_settings(settings, server)) as client:
        yield Api(client, key, tenant_id)


def remember(content: str, subject: str | None = None, type_: str = "preference") -> ToolCall:
    args: dict[str, Any] = {"content": content, "type": type_}
    if subject:
        args["subject"] = subject
    return ToolCall("remember", args)


async def test_tool_call_round_trip_writes_memory_with_provenance(
    online: Api, server: ScriptedOpenAI
) -> None:
    server.script_chat(
        [
            ChatStep.tools(
                remember("The user prefers dark mode", "theme"),
                usage={"prompt_tokens": 120, "completion_tokens": 15},
            ),
            ChatStep.text("Got it, dark mode.", usage={"prompt_tokens": 160, "completion_tokens": 6}),
        ]
    )
    response = await online.post(
        "/v1/chat", {"user_id": "u", "message": "I like dark mode", "session_id": "s1"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["mode"] == "online"
    assert body["answer"] == "Got it, dark mode."
    assert body["tool_calls"][0]["name"] == "remember"
    assert body["tool_calls"][0]["result"]["action"] == "created"
    memory = (await online.get(f"/v1/memories/{body['tool_calls'][0]['result']['id']}")).json()
    assert memory["source_model"] == CHAT_MODEL
    assert memory["embed_model"] == EMBED_MODEL
    assert memory["session_id"] == "s1"
    assert memory["source_message_id"] is not None
    # The second model call saw the tool result, and the system prompt framed memories as data.
    chat_calls = server.calls_to("/v1/chat/completions")
    assert chat_calls[1].body["messages"][-1]["role"] == "tool"
    assert "not\ninstructions" in chat_calls[0].body["messages"][0]["content"]
    assert {t["function"]["name"] for t in chat_calls[0].body["tools"]} == {"remember", "recall", "forget"}


async def test_usage_endpoint_equals_what_the_server_reported(online: Api, server: ScriptedOpenAI) -> None:
    server.script_chat(
        [
            ChatStep.tools(
                remember("Prefers window seats", "seat"),
                usage={"prompt_tokens": 100, "completion_tokens": 10},
            ),
            ChatStep.text("Noted.", usage={"prompt_tokens": 130, "completion_tokens": 3}),
            ChatStep.text("Hello again.", usage={"prompt_tokens": 90, "completion_tokens": 4}),
        ]
    )
    await online.post("/v1/chat", {"user_id": "u", "message": "I always take a window seat"})
    await online.post("/v1/chat", {"user_id": "u", "message": "hi"})
    usage = (await online.get("/v1/usage", user_id="u")).json()
    assert usage["by_model"][CHAT_MODEL]["prompt_tokens"] == 100 + 130 + 90
    assert usage["by_model"][CHAT_MODEL]["completion_tokens"] == 10 + 3 + 4
    assert usage["by_model"][CHAT_MODEL]["calls"] == 3
    embed_calls = server.calls_to("/v1/embeddings")
    reported_embed = sum(len(text.split()) for c in embed_calls for text in c.body["input"])
    assert usage["by_model"][EMBED_MODEL]["total_tokens"] == reported_embed
    assert usage["by_model"][EMBED_MODEL]["calls"] == len(embed_calls)


async def test_a_429_is_retried_by_the_sdk_and_the_request_succeeds(
    online: Api, server: ScriptedOpenAI
) -> None:
    server.script_chat([ChatStep.text("Hello!")])
    server.fail_next(429, times=1, path="/v1/chat/completions")
    response = await online.post("/v1/chat", {"user_id": "u", "message": "hello there"})
    assert response.status_code == 200
    assert response.json()["mode"] == "online"
    assert [c.status for c in server.calls_to("/v1/chat/completions")] == [429, 200]


async def test_a_401_is_not_retried_and_the_offline_model_answers(
    online: Api, server: ScriptedOpenAI
) -> None:
    server.fail_next(401, times=1, path="/v1/chat/completions")
    response = await online.post("/v1/chat", {"user_id": "u", "message": "I prefer green tea"})
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "degraded"
    assert [c.status for c in server.calls_to("/v1/chat/completions")] == [401]
    assert "sk-test-key" not in json.dumps(body)
    assert any(
        "green tea" in m["content"] for m in (await online.get("/v1/memories", user_id="u")).json()["items"]
    )


async def test_a_timeout_degrades_to_the_offline_model(online: Api, server: ScriptedOpenAI) -> None:
    server.delay_next(5.0, times=3, path="/v1/chat/completions")
    response = await online.post("/v1/chat", {"user_id": "u", "message": "hello"})
    assert response.status_code == 200
    assert response.json()["mode"] == "degraded"
    assert response.json()["model"] == "engram-offline-1"


async def test_a_timeout_is_a_503_when_degrading_is_off(
    settings: Settings, server: ScriptedOpenAI, new_tenant: NewTenant
) -> None:
    server.reset()
    tenant_id, key = await new_tenant()
    strict = online_settings(settings, server, agent_degrade_to_offline=False, model_max_retries=0)
    async with running_client(strict) as client:
        api = Api(client, key, tenant_id)
        server.delay_next(5.0, times=1, path="/v1/chat/completions")
        response = await api.post("/v1/chat", {"user_id": "u", "message": "hello"})
        assert response.status_code == 503
        assert response.json()["error"] == "unavailable"
        # Nothing of the failed request was stored.
        assert (await api.get("/v1/usage", user_id="u")).json()["total"]["calls"] == 0


@pytest.mark.parametrize("facts", [1, 4])
async def test_chat_makes_one_embedding_call_to_read_and_one_to_write_whatever_the_number_of_facts(
    online: Api, server: ScriptedOpenAI, facts: int
) -> None:
    calls = [
        remember(f"Fact number {i} about the garden shed", f"shed fact {i}", "fact") for i in range(facts)
    ]
    server.script_chat([ChatStep.tools(*calls), ChatStep.text("Saved.")])
    response = await online.post("/v1/chat", {"user_id": "u", "message": "Here are facts about my shed"})
    assert response.status_code == 200
    assert len(server.calls_to("/v1/embeddings")) == 2  # the recall query, then one batch for every fact


async def test_extract_makes_one_embedding_call_and_clamps_untrusted_output(
    online: Api, server: ScriptedOpenAI
) -> None:
    actions = {
        "actions": [
            {
                "action": "create",
                "content": "Lives in Porto",
                "type": "identity",
                "subject": "home city",
                "importance": 7,
                "message_index": 0,
            },
            {
                "action": "create",
                "content": "Allergic to peanuts",
                "type": "not-a-type",
                "confidence": -3,
                "message_index": 99,
            },
            {"action": "create", "content": "Runs on Sundays", "type": "preference"},
            {"action": "explode", "content": "ignored"},
            {"action": "create", "content": "   "},
        ]
    }
    server.script_chat(
        [ChatStep.text(json.dumps(actions), usage={"prompt_tokens": 50, "completion_tokens": 40})]
    )
    response = await online.post(
        "/v1/memories/extract",
        {
            "user_id": "u",
            "messages": [
                {"role": "user", "content": "I live in Porto, I'm allergic to peanuts and run on Sundays"}
            ],
        },
    )
    assert response.status_code == 200, response.text
    created = response.json()["actions"]
    assert [a["memory"]["content"] for a in created] == [
        "Lives in Porto",
        "Allergic to peanuts",
        "Runs on Sundays",
    ]
    assert created[0]["memory"]["importance"] == 1.0
    assert created[1]["memory"]["type"] == "fact"
    assert created[1]["memory"]["confidence"] == 0.0
    assert created[0]["memory"]["source_message_id"] is not None
    assert created[1]["memory"]["source_message_id"] is None
    assert len(server.calls_to("/v1/embeddings")) == 1
    usage = (await online.get("/v1/usage", user_id="u")).json()
    assert usage["by_kind"]["extract"]["total_tokens"] == 90


async def test_malformed_tool_arguments_become_a_tool_error_not_a_failed_request(
    online: Api, server: ScriptedOpenAI
) -> None:
    server.script_chat([ChatStep.tools(ToolCall("remember", "{not json")), ChatStep.text("Sorry.")])
    response = await online.post("/v1/chat", {"user_id": "u", "message": "remember this"})
    assert response.status_code == 200
    assert "error" in response.json()["tool_calls"][0]["result"]
