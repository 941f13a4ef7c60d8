"""Request-scoped dependencies: the unit of work, the authenticated tenant, the request's context, and
every service built from that context (no service reaches into another for what it needs)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import structlog
from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.service import AgentService
from app.api.limits import ADMISSION_KEY, release_admission, yielding
from app.context import RequestContext
from app.dream.service import DreamService
from app.memory.service import MemoryService
from app.memory.timeline import Timeline
from app.portability.service import PortabilityService
from app.privacy.erase import Eraser
from app.spaces.service import SpaceService
from app.state import Services
from app.store.limits import Admission
from app.store.usage import UsageRepository
from app.tenancy.auth import Principal, authenticate
from app.webhooks.service import WebhookService

Context = NamedDependency[RequestContext]


async def provide_transaction(
    request: Request[object, object, State], db_session: NamedDependency[AsyncSession]
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
    finally:
        release_admission(request.scope["state"])  # the worker's turn, after the commit


async def provide_principal(
    request: Request[object, object, State], transaction: NamedDependency[AsyncSession]
) -> Principal:
    limiter = services_of(request.app.state).limiter
    authorization = request.headers.get("authorization")
    if limiter is None:
        principal = await authenticate(transaction, authorization)
    else:
        principal, admission = await limiter.authenticate(authorization)
    request.scope["state"]["tenant_id"] = str(principal.tenant)
    structlog.contextvars.bind_contextvars(tenant_id=str(principal.tenant))
    if limiter is not None:
        await limiter.enter(transaction, principal, admission, request.scope["state"])
    return principal


def services_of(state: State) -> Services:
    services: Services = state.services
    return services


async def provide_context(
    request: Request[object, object, State],
    principal: NamedDependency[Principal],
    transaction: NamedDependency[AsyncSession],
) -> RequestContext:
    admission = request.scope["state"].get(ADMISSION_KEY)
    limits = admission.limits if isinstance(admission, Admission) else None
    services = services_of(request.app.state)
    return services.context(transaction, principal.tenant, f"key:{principal.key_id}", limits)


async def provide_memory_service(context: Context) -> MemoryService:
    return MemoryService(context)


async def provide_agent_service(
    request: Request[object, object, State], state: State, context: Context
) -> AgentService:
    chat, offline = services_of(state).require_chat()
    chat = yielding(chat, request.scope["state"])  # a remote model's wait is not this worker's work
    await context.ensure_tokens()  # chat and extract call a model: not past the tenant's daily tokens
    request_id = structlog.contextvars.get_contextvars().get("request_id")
    return AgentService(context, chat, offline, request_id)


async def provide_dream_service(
    request: Request[object, object, State], state: State, context: Context
) -> DreamService:
    """Dreams ask the app's model, when it has an online one."""
    chat = services_of(state).chat
    return DreamService(context, yielding(chat, request.scope["state"]) if chat is not None else None)


async def provide_timeline(context: Context) -> Timeline:
    return Timeline(context)


async def provide_portability(context: Context) -> PortabilityService:
    return PortabilityService(context)


async def provide_eraser(context: Context) -> Eraser:
    return Eraser(context)


async def provide_spaces(context: Context) -> SpaceService:
    return SpaceService(context)


async def provide_usage_repository(context: Context) -> UsageRepository:
    return UsageRepository(context.session, context.tenant)


async def provide_webhooks(state: State, context: Context) -> WebhookService:
    return WebhookService(context, services_of(state).require_webhook_key())


DEPENDENCIES = {
    "transaction": Provide(provide_transaction),
    "principal": Provide(provide_principal),
    "context": Provide(provide_context),
    "memory_service": Provide(provide_memory_service),
    "agent_service": Provide(provide_agent_service),
    "dream_service": Provide(provide_dream_service),
    "timeline": Provide(provide_timeline),
    "portability": Provide(provide_portability),
    "eraser": Provide(provide_eraser),
    "usage_repository": Provide(provide_usage_repository),
    "webhooks": Provide(provide_webhooks),
    "spaces": Provide(provide_spaces),
}
