"""Tool calls run in this process: one unit of work per call, authenticated by the caller's API key.

A call is a request like a REST one: the key is resolved and the transaction bound to its tenant (RLS),
the request's context is built from the process's clients, the tool runs, and the transaction commits;
a refused call, or any error, rolls it back, so a bad call writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm.exc import StaleDataError

from app.agent.catalogue import Tool, ToolEnv, ToolResult, ToolScope
from app.agent.tooling import Arguments
from app.api.limits import release_admission, yielding
from app.embeddings.base import EmbeddingError
from app.lib.errors import Conflict, ServiceUnavailable, ValidationFailed
from app.lib.logging import get_logger
from app.memory.service import MemoryService
from app.state import Services
from app.tenancy.auth import authenticate

log = get_logger("engram.mcp")
SOURCE_MODEL = "mcp"  # what a memory written over MCP names as its source model
RETRYABLE_SQLSTATES = {"40P01", "40001", "55P03"}  # deadlock, serialization failure, lock timeout


@dataclass(frozen=True, slots=True)
class Caller:
    """Who calls: the API key (the tenant) and the end user whose memories the session works on."""

    key: str
    user_id: str
    agent_id: str | None = None  # the agent the session is (its private memories, its granted spaces)


def check_user(user_id: str) -> str:
    """The session's user, checked as the API checks a `user_id` field."""
    if not user_id.strip() or len(user_id) > 200 or "\x00" in user_id:
        raise ValidationFailed("the MCP user must be 1 to 200 characters, without NUL bytes")
    return user_id


def check_agent(agent_id: str | None) -> str | None:
    """The session's agent (None: the user's view, every agent's memories), checked like `agent_id`."""
    if agent_id is not None and (not agent_id or len(agent_id) > 200 or "\x00" in agent_id):
        raise ValidationFailed("the MCP agent must be 1 to 200 characters, without NUL bytes")
    return agent_id


class _Refused(Exception):
    """A refused call: raised inside the transaction so that it rolls back."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.result.get("error"))
        self.result = result


class LocalRunner:
    def __init__(
        self, services: Services, sessions: async_sessionmaker[AsyncSession], caller: Callable[[], Caller]
    ) -> None:
        self.services = services
        self.sessions = sessions
        self.caller = caller

    async def run(self, tool: Tool, arguments: Arguments) -> ToolResult:
        caller = self.caller()
        try:
            return await self._run(tool, arguments, caller)
        except _Refused as refused:
            return refused.result
        except EmbeddingError:
            log.warning("embedding_failed", tool=tool.name)
            raise ServiceUnavailable("the embedding provider failed; try again later") from None
        except StaleDataError:
            raise Conflict("a concurrent request removed a memory this call changes; retry") from None
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) in RETRYABLE_SQLSTATES:
                raise Conflict("a concurrent request touched the same data; retry") from None
            raise

    async def _run(self, tool: Tool, arguments: Arguments, caller: Caller) -> ToolResult:
        admitted: dict[str, Any] = {}  # the call's turn of the worker, as a request's scope state
        async with self.sessions() as session:
            try:
                result = await self._call(session, tool, arguments, caller, admitted)
            except BaseException:
                await session.rollback()
                raise
            else:
                await session.commit()
            finally:
                release_admission(admitted)
        return result

    async def _call(
        self,
        session: AsyncSession,
        tool: Tool,
        arguments: Arguments,
        caller: Caller,
        admitted: dict[str, Any],
    ) -> ToolResult:
        """The call inside its unit of work: admitted under the tenant's limits like a REST request
        (rate, the worker's turn, concurrency; quotas through the context), then run."""
        services = self.services
        limiter, authorization = services.limiter, f"Bearer {caller.key}"
        limits = None
        if limiter is None:
            principal = await authenticate(session, authorization)
        else:
            principal, admission = await limiter.authenticate(authorization)
            await limiter.enter(session, principal, admission, admitted)
            limits = admission.limits
        ctx = services.context(session, principal.tenant, f"key:{principal.key_id}", limits)
        scope = ToolScope(
            user_id=caller.user_id,
            project_id=None,
            session_id=None,
            source_model=SOURCE_MODEL,
            source_message_id=None,
            token_budget=services.settings.default_token_budget,
            agent_id=caller.agent_id,
        )
        chat = yielding(services.chat, admitted) if services.chat is not None else None
        env = ToolEnv(ctx, MemoryService(ctx), scope, chat=chat)
        [result] = await tool.run(env, [arguments])
        if result.error is not None:
            raise _Refused(result)
        return result
