"""The offline model: a deterministic, rule-based stand-in for an LLM that runs the same loop.

It reads intent and facts from the last user message (`app.language.analysis`) and answers with real tool
calls (forget, remember, recall, in that order); once the tools have answered, it writes a templated
reply from their results. No key, no network; tokens are counted with tiktoken like any model's.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from app.agent.catalogue import CATALOGUE, Arguments, ForgetArgs, RecallArgs, RememberArgs
from app.agent.providers.base import ChatTurn, Message, Tool, ToolCall, Usage
from app.language import rules
from app.language.analysis import Analysis, analyse
from app.language.facts import FactIntent
from app.lib.tokens import TokenCounter

OFFLINE_MODEL = "engram-offline-1"

_MEMORIES = re.compile(r"<memories>\n(?P<block>.*?)\n</memories>", re.DOTALL)
_LINE_CONTENT = re.compile(r"^- (?:\[[^\]]*\] )?(?P<content>.+)$")  # a context line after its label


def recalled_contents(messages: Sequence[Message]) -> list[str]:
    """The contents of the memories recalled into the system prompt (app.agent.loop), best first."""
    for message in messages:
        if message.get("role") == "system" and (m := _MEMORIES.search(str(message.get("content") or ""))):
            lines = (_LINE_CONTENT.match(line.strip()) for line in m["block"].splitlines())
            return [line["content"] for line in lines if line]
    return []


def restate(fact: FactIntent, recalled: Sequence[str]) -> FactIntent:
    """A correction that gives only the new value ("Actually, it's Lisbon, not Porto": "It's Lisbon.")
    restated as the recalled memory that holds the old value, with the value swapped ("I live in Lisbon
    (home city)."), as a model would: a self-contained sentence in the corrected memory's slot, so the
    slot supersedes it and a later question about the slot finds it."""
    if not fact.is_correction or not fact.previous_value or fact.subject is not None:
        return fact
    said = rules.IT_IS.match(fact.content)
    value = rules.clean_value(said["value"]) if said else None
    if not value:
        return fact
    old = re.compile(rf"(?<!\w){re.escape(fact.previous_value)}(?!\w)", re.IGNORECASE)
    for content in recalled:
        if old.search(content):
            restated = analyse(old.sub(value, content)).facts
            if len(restated) == 1 and restated[0].subject is not None:
                return replace(restated[0], is_correction=True, previous_value=fact.previous_value)
            break
    return fact


def plan_tool_calls(analysis: Analysis, recalled: Sequence[str] = ()) -> list[ToolCall]:
    """Forget first (so a correction in the same message survives), then remember, then recall; each
    call written with its tool's argument struct from the catalogue. `recalled`: the contents of the
    memories recalled for the message, which a bare correction is restated from (`restate`)."""
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
        for fact in (restate(f, recalled) for f in analysis.facts)
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
            calls = plan_tool_calls(analysis, recalled_contents(messages)) if tools else []
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
