"""The chat provider interface shared by the OpenAI-compatible client and the offline model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.usage.meter import Usage

__all__ = ["ChatProvider", "ChatTurn", "Message", "ProviderError", "Tool", "ToolCall", "Usage"]

Message = dict[str, Any]  # an OpenAI chat message: {"role", "content", "tool_calls"?, "tool_call_id"?}
Tool = dict[
    str, Any
]  # an OpenAI function tool: {"type": "function", "function": {name, description, parameters}}


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]  # parsed; {} when the model sent something that is not a JSON object
    raw_arguments: str


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """One model response: text and/or tool calls, with what it cost."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_ms: float = 0.0

    def as_message(self) -> Message:
        """The assistant message to append to the conversation before sending tool results."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in self.tool_calls
            ]
        return message


class ProviderError(Exception):
    """The provider failed after its own retries (or on a non-retryable error such as 401)."""

    def __init__(self, message: str, *, status_code: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = retryable


class ChatProvider(Protocol):
    """A model behind the agent loop, extraction and dreaming."""

    @property
    def model(self) -> str: ...

    @property
    def mode(self) -> str: ...  # "online" or "offline"

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[Tool] | None = None, json_mode: bool = False
    ) -> ChatTurn:
        """One model call. Never mutates `messages`."""
        ...

    async def aclose(self) -> None: ...
