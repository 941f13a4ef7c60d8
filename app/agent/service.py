"""Chat and extraction for one tenant and request: messages stored redacted, usage metered."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.agent.catalogue import ToolEnv, ToolScope
from app.agent.extract import Proposed, model_actions, offline_actions
from app.agent.loop import AgentLoop, LoopResult
from app.agent.messages import MessageRepository
from app.agent.providers.base import ChatProvider, Message, ProviderError, Usage
from app.context import RequestContext
from app.db.models import Memory
from app.lib.errors import ServiceUnavailable, ValidationFailed
from app.lib.redaction import redact
from app.memory.models import RecallInput, RecallResult, RememberInput
from app.memory.service import MemoryService
from app.store.usage import UsageRepository
from app.usage.meter import UsageMeter, metering
from app.vocabulary import Source


@dataclass(frozen=True, slots=True)
class ChatOutcome:
    loop: LoopResult
    recall: RecallResult
    usage: dict[str, Any]


class AgentService:
    """The agent of one request: `provider` is the app's model, `offline` its fallback."""

    def __init__(
        self,
        ctx: RequestContext,
        provider: ChatProvider,
        offline: ChatProvider,
        request_id: str | None = None,
    ) -> None:
        settings = ctx.settings
        self.ctx = ctx
        self.memory = MemoryService(ctx)
        self.messages = MessageRepository(ctx.session, ctx.tenant)
        self.usage = UsageRepository(ctx.session, ctx.tenant)
        self.provider, self.offline, self.request_id = provider, offline, request_id
        self.max_turns, self.degrade = settings.agent_max_turns, settings.agent_degrade_to_offline
        self.history_turns, self.max_chars = settings.chat_history_turns, settings.max_content_chars

    async def chat(
        self,
        *,
        user_id: str,
        message: str,
        session_id: str | None,
        project_id: str | None,
        token_budget: int | None,
        agent_id: str | None = None,
    ) -> ChatOutcome:
        token_budget = token_budget or self.ctx.settings.default_token_budget
        if not message.strip():
            raise ValidationFailed("message must not be empty")
        if len(message) > self.max_chars:
            raise ValidationFailed(f"message is longer than {self.max_chars} characters")
        clean = redact(message).text
        meter = UsageMeter()
        with metering(meter):
            history: list[Message] = []
            if session_id:
                turns = await self.messages.recent(user_id, session_id, self.history_turns)
                history = [{"role": m.role, "content": m.content} for m in turns]
            stored = self.messages.add(
                user_id=user_id, role="user", content=clean, project_id=project_id, session_id=session_id
            )
            recall = await self.memory.recall(
                RecallInput(
                    user_id=user_id,
                    query=clean,
                    project_id=project_id,
                    token_budget=token_budget,
                    agent_id=agent_id,
                )
            )
            loop = AgentLoop(self.provider, self.offline, meter, self.max_turns, self.degrade)
            scope = ToolScope(
                user_id=user_id,
                project_id=project_id,
                session_id=session_id,
                source_model=self.provider.model,
                source_message_id=stored.id,
                token_budget=token_budget,
                agent_id=agent_id,
            )
            tools = ToolEnv(self.ctx, self.memory, scope)
            result = await loop.run([*history, {"role": "user", "content": clean}], recall.context, tools)
            result.answer = redact(result.answer).text
            for m in reversed(recall.memories):
                if m.memory.id not in result.memories_used:
                    result.memories_used.insert(0, m.memory.id)
            self.messages.add(
                user_id=user_id,
                role="assistant",
                content=result.answer,
                project_id=project_id,
                session_id=session_id,
                model=result.model,
            )
        self.usage.add_all(meter, user_id=user_id, session_id=session_id, request_id=self.request_id)
        return ChatOutcome(loop=result, recall=recall, usage=meter.summary())

    async def extract(
        self,
        *,
        user_id: str,
        messages: Sequence[tuple[str, str]],
        session_id: str | None,
        project_id: str | None,
    ) -> list[tuple[str, Memory]]:
        if not messages or len(messages) > 50:
            raise ValidationFailed("messages must hold between 1 and 50 messages")
        clean = [(role, redact(content).text) for role, content in messages]
        meter = UsageMeter()
        with metering(meter):
            stored = [
                self.messages.add(
                    user_id=user_id, role=r, content=c, project_id=project_id, session_id=session_id
                )
                for r, c in clean
            ]
            proposed, model = await self._propose(clean, meter)
            actions = await self._apply(proposed, stored, user_id, project_id, session_id, model)
        self.usage.add_all(meter, user_id=user_id, session_id=session_id, request_id=self.request_id)
        return actions

    async def _propose(self, clean: list[tuple[str, str]], meter: UsageMeter) -> tuple[list[Proposed], str]:
        if self.provider.mode == "offline":
            started = time.perf_counter()
            proposed = offline_actions(clean)
            # Rules, not a model: metered as a call that cost nothing, so /v1/usage counts every extract.
            meter.record("extract", self.provider.model, Usage(0, 0, 0), _ms(started))
            return proposed, self.provider.model
        try:
            proposed, turn = await model_actions(self.provider, clean, max_chars=self.max_chars)
        except ProviderError as exc:
            if not self.degrade:
                raise ServiceUnavailable(f"the model provider failed: {exc}") from None
            return offline_actions(clean), self.offline.model
        meter.record("extract", turn.model, turn.usage, turn.latency_ms)
        return proposed, turn.model

    async def _apply(
        self,
        proposed: list[Proposed],
        stored: list[Any],
        user_id: str,
        project_id: str | None,
        session_id: str | None,
        model: str,
    ) -> list[tuple[str, Memory]]:
        actions: list[tuple[str, Memory]] = []
        for p in (p for p in proposed if p.action == "forget"):
            ids = await self._forget(user_id, p)
            actions.extend([("forgotten", await self.memory.get(memory_id)) for memory_id in ids])
        creates = [p for p in proposed if p.action == "create"]
        items = [
            RememberInput(
                user_id=user_id,
                content=p.content,
                type=p.type,
                subject=p.subject,
                project_id=project_id,
                session_id=session_id,
                importance=p.importance,
                confidence=p.confidence,
                source=Source.EXTRACT,
                source_model=model,
                source_message_id=stored[p.message_index].id if p.message_index is not None else None,
            )
            for p in creates
        ]
        if items:
            results = await self.memory.remember_many(items)
            actions.extend((r.action, r.memory) for r in results)
        return actions

    async def _forget(self, user_id: str, p: Proposed) -> list[uuid.UUID]:
        if p.subject:
            try:
                found = await self.memory.forget(
                    user_id, subject=p.subject, reason="extraction: asked to forget"
                )
            except ValidationFailed:
                found = []
            if found:
                return found
        return await self.memory.forget(user_id, query=p.content, reason="extraction: asked to forget")


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
