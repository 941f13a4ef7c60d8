"""Chat through any OpenAI-compatible endpoint (DashScope/Qwen, OpenAI, Ollama, vLLM).

Retries are the SDK's own (`max_retries`, exponential backoff on connection errors, 408, 409, 429 and
5xx; never on 401/403); timeouts are the client's. The client is created once per process.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import openai

from app.agent.providers.base import ChatTurn, Message, ProviderError, Tool, ToolCall, Usage
from app.lib.redaction import redact


def _arguments(raw: str | None) -> dict[str, Any]:
    """Tool arguments are untrusted model output: anything but a JSON object becomes {}."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class OpenAIChatProvider:
    """A `ChatProvider` over `openai.AsyncOpenAI`."""

    mode = "online"

    def __init__(self, client: openai.AsyncOpenAI, model: str, *, owns_client: bool = True) -> None:
        self._client = client
        self._model = model
        self._owns_client = owns_client

    @property
    def model(self) -> str:
        return self._model

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[Tool] | None = None, json_mode: bool = False
    ) -> ChatTurn:
        request: dict[str, Any] = {"model": self._model, "messages": [dict(m) for m in messages]}
        if tools:
            request["tools"] = [dict(t) for t in tools]
            request["tool_choice"] = "auto"
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        started = time.perf_counter()
        try:
            response = await self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            retryable = exc.status_code in (408, 409, 429) or exc.status_code >= 500
            message = f"model endpoint answered {exc.status_code}: {redact(str(exc.message)).text[:300]}"
            raise ProviderError(message, status_code=exc.status_code, retryable=retryable) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise ProviderError(f"model endpoint unreachable: {type(exc).__name__}", retryable=True) from None
        latency = (time.perf_counter() - started) * 1000
        if not response.choices:
            raise ProviderError("model endpoint returned no choices")
        message = response.choices[0].message
        calls = [
            ToolCall(c.id, c.function.name, _arguments(c.function.arguments), c.function.arguments or "{}")
            for c in (message.tool_calls or [])
            if c.type == "function"
        ]
        usage = response.usage
        return ChatTurn(
            content=message.content,
            tool_calls=calls,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
            if usage
            else Usage(),
            model=response.model or self._model,
            latency_ms=round(latency, 2),
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()
