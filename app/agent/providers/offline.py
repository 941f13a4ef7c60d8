"""The offline model: a deterministic, rule-based stand-in for an LLM that runs the same loop.

It reads intent and facts from the last user message (`app.language.analysis`) and answers with real tool
calls (forget, remember, recall, in that order); once the tools have answered, it writes a templated
reply from their results. No key, no network; tokens are counted with tiktoken like any model's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from app.agent.catalogue import CATALOGUE, Arguments, ForgetArgs, RecallArgs, RememberArgs
from app.agent.providers.base import ChatTurn, Message, Tool, ToolCall, Usage
from app.language.analysis import Analysis, analyse
from app.lib.tokens import TokenCounter

OFFLINE_MODEL = "engram-offline-1"


def plan_tool_calls(analysis: Analysis) -> list[ToolCall]:
    """Forget first (so a correction in the same message survives), then remember, then recall; each
    call written with its tool's argument struct from the catalogue."""
    planned: list[Arguments] = [
        ForgetArgs(description=f.description, subject=f.subject) for f in analysis.forgets
    ]
    planned += [
        RememberArgs(
            content=fact.content,
            type=fact.type,
            importance=fact.importance,
            subject=fact.subject,
            replaces=fact.previous_value if fact.is_correction else None,
        )
        for fact in analysis.facts
    ]
    if analysis.question:
        planned.append(RecallArgs(query=analysis.question))
    return [CATALOGUE.call(f"call_{index}", args) for index, args in enumerate(planned)]


def _tool_results(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The tool results that answer the latest user message."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            try:
                results.insert(0, json.loads(message.get("content") or "{}"))
            except json.JSONDecodeError:
                results.insert(0, {"tool": "unknown", "error": "unreadable result"})
    return results


def _sentence(result: dict[str, Any]) -> str:
    tool = result.get("tool")
    if "error" in result:
        return f"I could not complete a {tool} step: {result['error']}"
    if tool == "remember":
        content = result.get("content", "")
        action = result.get("action")
        if action == "superseded":
            return f"Updated: {content} (this replaces what I had before)."
        if action == "deduplicated":
            return f"I already had that: {content}"
        return f"Noted: {content}"
    if tool == "forget":
        count = len(result.get("forgotten", []))
        what = result.get("description") or "that"
        return (
            f"Forgotten {count} memor{'y' if count == 1 else 'ies'} about {what}."
            if count
            else (f"I found nothing stored about {what} to forget.")
        )
    if tool == "recall":
        context = result.get("context") or ""
        if not context:
            return "I don't have anything stored about that yet."
        return "Here is what I remember that is relevant:\n" + context
    return ""


def compose_answer(results: Sequence[dict[str, Any]]) -> str:
    """A plain reply built only from what the tools returned."""
    sentences = [s for s in (_sentence(r) for r in results) if s]
    return "\n".join(sentences) if sentences else "Done."


def _chitchat_reply(analysis: Analysis) -> str:
    if analysis.is_greeting_or_chitchat:
        return "Hello! Tell me what to remember, or ask me what I know."
    return "Understood."


class OfflineModel:
    """A `ChatProvider` that needs no network: rules in, tool calls and templated answers out."""

    mode = "offline"

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter or TokenCounter()

    @property
    def model(self) -> str:
        return OFFLINE_MODEL

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[Tool] | None = None, json_mode: bool = False
    ) -> ChatTurn:
        started = time.perf_counter()
        last = messages[-1] if messages else {"role": "user", "content": ""}
        calls: list[ToolCall] = []
        content: str | None
        if last.get("role") == "tool":
            content = compose_answer(_tool_results(messages))
        else:
            analysis = analyse(str(last.get("content") or ""))
            calls = plan_tool_calls(analysis) if tools else []
            content = None if calls else _chitchat_reply(analysis)
        if json_mode and content is not None:
            content = json.dumps({"answer": content})
        prompt = self._counter.count(json.dumps([dict(m) for m in messages], default=str))
        prompt += self._counter.count(json.dumps(list(tools or []), default=str))
        completion = self._counter.count(content or "") + sum(
            self._counter.count(c.name + c.raw_arguments) for c in calls
        )
        return ChatTurn(
            content=content,
            tool_calls=calls,
            usage=Usage(prompt, completion, prompt + completion),
            model=OFFLINE_MODEL,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    async def aclose(self) -> None:
        return None
