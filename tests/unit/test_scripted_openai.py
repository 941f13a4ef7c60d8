"""The scripted OpenAI server itself, driven through the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from tests.support.scripted_openai import ChatStep, ScriptedOpenAI, ToolCall

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "remember",
            "description": "Store a memory",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    }
]
CHAT = "/v1/chat/completions"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as scripted:
        yield scripted


@pytest.fixture
async def client(server: ScriptedOpenAI) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=2, timeout=5.0)
    yield client
    await client.close()


async def test_tool_call_round_trip(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    server.script_chat(
        [
            ChatStep.tools(ToolCall("remember", {"text": "User likes tea"}, id="call_abc")),
            ChatStep.text("Stored.", usage={"prompt_tokens": 11, "completion_tokens": 2}),
        ]
    )
    messages: list[Any] = [{"role": "user", "content": "Remember that I like tea"}]

    first = await client.chat.completions.create(model="scripted-chat", messages=messages, tools=TOOLS)

    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert call.id == "call_abc"
    assert call.type == "function"
    assert call.function.name == "remember"
    assert json.loads(call.function.arguments) == {"text": "User likes tea"}
    assert first.usage is not None
    assert first.usage.prompt_tokens > 0
    assert first.usage.completion_tokens > 0
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens

    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "ok"},
    ]
    second = await client.chat.completions.create(model="scripted-chat", messages=messages, tools=TOOLS)

    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "Stored."
    assert second.choices[0].message.tool_calls is None
    assert second.usage is not None
    assert (second.usage.prompt_tokens, second.usage.completion_tokens, second.usage.total_tokens) == (
        11,
        2,
        13,
    )

    calls = server.calls_to(CHAT)
    assert [c.status for c in calls] == [200, 200]
    assert calls[0].body["tools"][0]["function"]["name"] == "remember"
    assert calls[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "call_abc", "content": "ok"}
    assert server.pending_steps == 0


async def test_usage_is_deterministic_function_of_request(
    server: ScriptedOpenAI, client: openai.AsyncOpenAI
) -> None:
    server.script_chat(["same", "same", "same"])
    short: list[Any] = [{"role": "user", "content": "hi"}]
    long: list[Any] = [{"role": "user", "content": "hi " * 200}]
    a = await client.chat.completions.create(model="m", messages=short)
    b = await client.chat.completions.create(model="m", messages=short)
    c = await client.chat.completions.create(model="m", messages=long)
    assert a.usage == b.usage
    assert a.usage is not None
    assert c.usage is not None
    assert c.usage.prompt_tokens > a.usage.prompt_tokens


async def test_callable_step_sees_request(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    def echo(body: dict[str, Any]) -> ChatStep:
        return ChatStep.text(f"you said: {body['messages'][-1]['content']}")

    server.script_chat([echo, {"tool_calls": [{"name": "remember", "arguments": "{not json"}]}])
    reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}])
    assert reply.choices[0].message.content == "you said: ping"

    raw = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert raw.choices[0].message.tool_calls is not None
    # Raw-string arguments go out verbatim, so agents' malformed-JSON handling can be tested.
    assert raw.choices[0].message.tool_calls[0].function.arguments == "{not json"  # type: ignore[union-attr]


async def test_exhausted_script_is_a_clear_non_retried_500(
    server: ScriptedOpenAI, client: openai.AsyncOpenAI
) -> None:
    with pytest.raises(openai.InternalServerError, match="chat script exhausted"):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert [c.status for c in server.calls] == [500]


async def test_fault_injection_is_per_path_and_counted(
    server: ScriptedOpenAI, client: openai.AsyncOpenAI
) -> None:
    server.script_chat(["ok"])
    server.fail_next(status=500, times=2, path="chat/completions")

    models = await client.models.list()
    reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

    assert [m.id for m in models.data] == ["scripted-chat", "scripted-embedding"]
    assert reply.choices[0].message.content == "ok"
    assert [(c.path, c.status) for c in server.calls] == [
        ("/v1/models", 200),
        (CHAT, 500),
        (CHAT, 500),
        (CHAT, 200),
    ]


async def test_unauthorized_body_is_openai_shaped(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    server.fail_next(status=401)
    with pytest.raises(openai.AuthenticationError) as excinfo:
        await client.models.list()
    assert excinfo.value.code == "invalid_api_key"
    assert len(server.calls) == 1


async def test_embeddings_endpoint_float_and_base64(
    server: ScriptedOpenAI, client: openai.AsyncOpenAI
) -> None:
    as_float = await client.embeddings.create(model="e", input=["one two", "three"], encoding_format="float")
    # Without encoding_format the SDK asks for base64 and decodes it itself.
    as_default = await client.embeddings.create(model="e", input=["one two", "three"])
    assert [d.index for d in as_float.data] == [0, 1]
    assert len(as_float.data[0].embedding) == 64
    assert as_float.usage.prompt_tokens == 3
    for a, b in zip(as_float.data, as_default.data, strict=True):
        assert a.embedding == pytest.approx(b.embedding, abs=1e-6)


def test_reset_and_context_manager_restart() -> None:
    server = ScriptedOpenAI()
    with server:
        server.script_chat(["a"])
        server.fail_next(status=429)
        server.reset()
        assert server.pending_steps == 0
        assert server.calls == []
    with pytest.raises(RuntimeError, match="not started"):
        _ = ScriptedOpenAI().base_url
