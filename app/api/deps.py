"""Request-scoped dependencies: the unit of work, the authenticated tenant, the memory service."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import structlog
from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.messages import MessageRepository
from app.agent.service import AgentService
from app.memory.context import MemoryDeps
from app.memory.repository import MemoryRepository
from app.memory.service import MemoryService
from app.state import Services
from app.tenancy.auth import Principal, authenticate
from app.usage.repository import UsageRepository


async def provide_transaction(
    db_session: NamedDependency[AsyncSession],
) -> AsyncGenerator[AsyncSession, None]:
    """The request's unit of work: commit after the handler succeeds, roll back on any error.

    Committing here (not in a before-send hook) means a failed commit becomes an error response
    instead of an acknowledged write that was never stored.
    """
    try:
        yield db_session
    except BaseException:
        await db_session.rollback()
        raise
    else:
        await db_session.commit()


async def provide_principal(
    request: Request[object, object, State], transaction: NamedDependency[AsyncSession]
) -> Principal:
    principal = await authenticate(transaction, request.headers.get("authorization"))
    request.scope["state"]["tenant_id"] = str(principal.tenant)
    structlog.contextvars.bind_contextvars(tenant_id=str(principal.tenant))
    return principal


def services_of(state: State) -> Services:
    services: Services = state.services
    return services


async def provide_memory_service(
    state: State, principal: NamedDependency[Principal], transaction: NamedDependency[AsyncSession]
) -> MemoryService:
    services = services_of(state)
    deps = MemoryDeps(
        repo=MemoryRepository(transaction, principal.tenant),
        embedder=services.require_embedder(),
        settings=services.settings,
        counter=services.counter,
        clock=services.clock,
        reinforcements=services.reinforcements,
        spare=services.spare,
    )
    return MemoryService(deps, actor=f"key:{principal.key_id}")


async def provide_usage_repository(
    principal: NamedDependency[Principal], transaction: NamedDependency[AsyncSession]
) -> UsageRepository:
    return UsageRepository(transaction, principal.tenant)


async def provide_agent_service(
    state: State,
    principal: NamedDependency[Principal],
    transaction: NamedDependency[AsyncSession],
    memory_service: NamedDependency[MemoryService],
    usage_repository: NamedDependency[UsageRepository],
) -> AgentService:
    services = services_of(state)
    chat, offline = services.require_chat()
    settings = services.settings
    return AgentService(
        memory=memory_service,
        messages=MessageRepository(transaction, principal.tenant),
        usage=usage_repository,
        provider=chat,
        offline=offline,
        max_turns=settings.agent_max_turns,
        degrade=settings.agent_degrade_to_offline,
        history_turns=settings.chat_history_turns,
        max_chars=settings.max_content_chars,
        request_id=structlog.contextvars.get_contextvars().get("request_id"),
    )
