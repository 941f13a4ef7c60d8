"""Runs the model's tool calls of one turn through the tool catalogue.

Arguments are untrusted: each call is validated on its own, so one bad call becomes an error result the
model can read, not a failed request. Each tool gets all of its calls of the turn at once (all
`remember` calls are one batch: one embedding call, whatever the number of facts), tools run in phase
order (forgets, remembers, recalls), and the results come back in the order the model asked.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from app.agent.catalogue import MODEL_CATALOGUE, Catalogue, ToolArgumentError, ToolEnv
from app.agent.providers.base import ToolCall


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    call: ToolCall
    result: dict[str, Any]
    memory_ids: list[uuid.UUID]  # memories this call put in front of the model (recall)


class ToolExecutor:
    def __init__(self, env: ToolEnv, catalogue: Catalogue = MODEL_CATALOGUE) -> None:
        self.env = env
        self.catalogue = catalogue

    async def run_turn(self, calls: list[ToolCall]) -> list[ToolOutcome]:
        outcomes: dict[str, ToolOutcome] = {}
        by_tool: dict[str, list[tuple[ToolCall, Any]]] = {}
        for call in calls:
            try:
                args = self.catalogue.parse(call.name, call.arguments)
            except ToolArgumentError as exc:
                outcomes[call.id] = ToolOutcome(call, {"tool": call.name, "error": str(exc)}, [])
                continue
            by_tool.setdefault(call.name, []).append((call, args))
        for tool in sorted((self.catalogue.tool(name) for name in by_tool), key=lambda t: t.phase):
            parsed = by_tool[tool.name]
            results = await tool.run(self.env, [args for _, args in parsed])
            for (call, _), result in zip(parsed, results, strict=True):
                outcomes[call.id] = ToolOutcome(call, result.result, result.memory_ids)
        return [outcomes[c.id] for c in calls]
