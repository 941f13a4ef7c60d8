"""/v1/chat, /v1/memories/extract, /v1/usage: HTTP <-> agent service."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, QueryParameter

from app.agent.loop import tool_call_view
from app.agent.service import AgentService
from app.api.convert import recall_out
from app.api.guards import require_bearer
from app.api.limits import ADMISSION_KEY, usage_against_limits
from app.api.schemas import NO_NUL, Ident, MemoryOut, Strict, Text, TraceOut
from app.lib.validation import check_time
from app.store.usage import UsageRepository

MaybeIdent = Annotated[str | None, QueryParameter(max_length=200, pattern=NO_NUL)]
MaybeTime = Annotated[datetime | None, QueryParameter()]


class ChatIn(Strict):
    user_id: Ident
    message: Text
    session_id: Ident | None = None
    project_id: Ident | None = None
    token_budget: Annotated[int, msgspec.Meta(ge=1, le=32768)] | None = None
    agent_id: Ident | None = None  # the agent this chat is: its tools read and write as that agent


class ToolCallOut(msgspec.Struct, kw_only=True):
    name: str
    arguments: dict[str, Any]
    result: dict[str, Any]


class ChatOut(msgspec.Struct, kw_only=True):
    answer: str
    tool_calls: list[ToolCallOut]
    memories_used: list[uuid.UUID]
    trace: TraceOut | None
    usage: dict[str, Any]
    model: str
    mode: str


class MessageIn(Strict):
    role: Literal["user", "assistant", "system"]
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=8000, pattern=NO_NUL)]


class ExtractIn(Strict):
    user_id: Ident
    messages: Annotated[list[MessageIn], msgspec.Meta(min_length=1, max_length=50)]
    project_id: Ident | None = None
    session_id: Ident | None = None


class ActionOut(msgspec.Struct, kw_only=True):
    action: str
    memory: MemoryOut


class ExtractOut(msgspec.Struct, kw_only=True):
    actions: list[ActionOut]


class AgentController(Controller):
    path = "/v1"
    tags = ["agent"]
    guards = [require_bearer]

    @post("/chat", status_code=200)
    async def chat(self, data: JSONBody[ChatIn], agent_service: NamedDependency[AgentService]) -> ChatOut:
        outcome = await agent_service.chat(
            user_id=data.user_id,
            message=data.message,
            session_id=data.session_id,
            project_id=data.project_id,
            token_budget=data.token_budget,
            agent_id=data.agent_id,
        )
        loop = outcome.loop
        return ChatOut(
            answer=loop.answer,
            tool_calls=[ToolCallOut(**tool_call_view(o)) for o in loop.outcomes],
            memories_used=loop.memories_used,
            trace=recall_out(outcome.recall, explain=True).trace,
            usage=outcome.usage,
            model=loop.model,
            mode=loop.mode,
        )

    @post("/memories/extract", status_code=200)
    async def extract(
        self, data: JSONBody[ExtractIn], agent_service: NamedDependency[AgentService]
    ) -> ExtractOut:
        actions = await agent_service.extract(
            user_id=data.user_id,
            messages=[(m.role, m.content) for m in data.messages],
            session_id=data.session_id,
            project_id=data.project_id,
        )
        return ExtractOut(actions=[ActionOut(action=a, memory=MemoryOut.of(m)) for a, m in actions])

    @get("/usage")
    async def usage(
        self,
        request: Request[Any, Any, Any],
        usage_repository: NamedDependency[UsageRepository],
        since: MaybeTime = None,
        until: MaybeTime = None,
        user_id: MaybeIdent = None,
    ) -> dict[str, Any]:
        check_time("since", since)
        check_time("until", until)
        usage = await usage_repository.aggregate(since=since, until=until, user_id=user_id)
        # The tenant's limits and what it uses of them now (whole tenant, whatever the filters).
        usage["limits"] = await usage_against_limits(
            usage_repository.session, usage_repository.tenant, request.scope["state"].get(ADMISSION_KEY)
        )
        return usage
