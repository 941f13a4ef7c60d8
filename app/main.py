"""The application factory: `create_app(settings)` builds everything; nothing is built at import time."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from advanced_alchemy.extensions.litestar import AsyncSessionConfig, SQLAlchemyAsyncConfig, SQLAlchemyPlugin
from litestar import Litestar
from litestar.datastructures import State
from litestar.types import Middleware
from sqlalchemy.ext.asyncio import AsyncEngine

from app.agent.providers.base import ChatProvider
from app.agent.providers.factory import build_chat_provider
from app.agent.providers.offline import OfflineModel
from app.api.agent import AgentController
from app.api.deps import DEPENDENCIES
from app.api.directory import DirectoryController
from app.api.dream import DreamController
from app.api.errors import EXCEPTION_HANDLERS
from app.api.health import HealthController
from app.api.limits import Limiter
from app.api.memories import MemoryController, RecallController
from app.api.middleware import access_log_middleware, unrouted_access_log
from app.api.operations import OperationsPlugin
from app.api.portability import PortabilityController, PrivacyController, import_router
from app.api.request import StrictJSONRequest, one_value_per_query_parameter
from app.api.spaces import SpaceController
from app.api.timeline import TimelineController
from app.api.usage_series import UsageSeriesController
from app.api.webhooks import EventStreamController, WebhookController
from app.db.session import create_engine
from app.db.spare import SpareReads
from app.db.urls import app_role_url
from app.embeddings.base import Embedder
from app.embeddings.cache import with_query_cache
from app.embeddings.factory import build_embedder
from app.inspector.routes import inspector_router
from app.lib.clock import Clock, SystemClock
from app.lib.heap import tune_for_serving
from app.lib.logging import configure_logging
from app.lib.metrics import Metrics
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.lib.tracing import Tracing
from app.mcp.http import McpHttp
from app.memory.maintenance import service_maintenance
from app.state import Services
from app.store.access import Reinforcements
from app.store.terms import TermIndex
from app.webhooks.deliverer import Deliverer
from app.webhooks.signing import SigningKey

APP_ROLE = "engram_app"


def service_database_url(settings: Settings) -> str:
    """The URL the service connects with: its own non-owner role, never the owner."""
    if settings.app_database_url:
        return settings.app_database_url
    if not settings.database_url:
        raise RuntimeError("DATABASE_URL is not set (the CLI starts the embedded database and sets it)")
    password = settings.app_db_password.get_secret_value() if settings.app_db_password else None
    return app_role_url(settings.database_url, APP_ROLE, password)


ROUTES = [
    HealthController,
    MemoryController,
    RecallController,
    AgentController,
    PortabilityController,
    PrivacyController,
    DreamController,
    TimelineController,
    DirectoryController,
    UsageSeriesController,
    # Change events (issue 25).
    WebhookController,
    EventStreamController,
    # Shared spaces (issue 25).
    SpaceController,
]


def create_app(
    settings: Settings,
    *,
    clock: Clock | None = None,
    embedder: Embedder | None = None,
    chat: ChatProvider | None = None,
    on_shutdown: Sequence[Callable[[], None]] = (),
    serving: bool = False,
) -> Litestar:
    """Build the Litestar app. Clients are created here or in the lifespan, once per process.

    `on_shutdown` runs after the engine is disposed (the CLI stops the embedded database there:
    uvicorn re-raises SIGTERM after a graceful shutdown, so atexit handlers would never run).
    `serving`: the process serves this app until it exits, so once startup is done the garbage collector
    is set up for that (`tune_for_serving`: what startup built is exempted from collection, the young
    generation is collected less often); tests build many apps in one process and leave it off.
    """
    configure_logging(settings.log_level, settings.log_json)
    engine = create_engine(
        service_database_url(settings), pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow
    )
    if embedder is not None:
        embedder = with_query_cache(embedder, settings.query_cache_size, settings.query_cache_ttl_s)
    services = Services(
        settings=settings, clock=clock or SystemClock(), counter=TokenCounter(), embedder=embedder, chat=chat
    )
    services.terms = TermIndex(settings.term_index_units)
    if settings.reinforce_interval_s > 0:
        services.reinforcements = Reinforcements(engine, settings.reinforce_interval_s)
    if settings.spare_connections > 0:
        services.spare = SpareReads.connect(
            service_database_url(settings), settings.spare_connections, engine
        )
    if settings.tenant_limits_enabled():
        limits_engine = create_engine(
            service_database_url(settings), pool_size=settings.limits_pool_size, max_overflow=0
        )
        services.limiter = Limiter(settings, limits_engine)
    # Change events: the key webhook secrets derive from; every worker delivers the outbox.
    services.webhook_key = SigningKey.of(settings)
    deliverer = Deliverer(engine, settings, services.webhook_key) if settings.webhook_interval_s > 0 else None
    metrics = Metrics()
    metrics.watch_pool("request", engine)
    if services.spare is not None:
        metrics.watch_pool("spare", services.spare.engine)
    # Outermost of the routes' middleware (the metrics wrap the whole app): the request span holds the
    # access log.
    middleware: list[Middleware] = [access_log_middleware]
    shutdown: list[Callable[[], None]] = []
    if settings.otel_endpoint:
        tracing = Tracing.configure(settings.otel_endpoint, settings.otel_service_name)
        middleware.insert(0, tracing.middleware)
        shutdown.append(tracing.shutdown)
    db_config = SQLAlchemyAsyncConfig(
        engine_instance=engine,
        session_config=AsyncSessionConfig(expire_on_commit=False),
        create_all=False,
    )
    mcp = McpHttp(services, engine)  # /mcp: the tool catalogue over MCP's streamable HTTP
    app = Litestar(
        route_handlers=[*ROUTES, import_router(settings.max_import_bytes), inspector_router(), mcp.route()],
        plugins=[SQLAlchemyPlugin(config=db_config), OperationsPlugin(metrics)],
        dependencies=DEPENDENCIES,
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        middleware=middleware,
        lifespan=[
            _lifespan(services, engine, on_shutdown, serving=serving),
            mcp.lifespan,
            _deliveries(deliverer),
        ],
        on_shutdown=shutdown,
        state=State({"services": services, "engine": engine, "deliverer": deliverer}),
        request_max_body_size=settings.max_body_bytes,
        request_class=StrictJSONRequest,
        before_request=one_value_per_query_parameter,
        debug=False,
        logging_config=None,  # the standard library's logging goes through structlog (app/lib/logging.py)
    )
    # Requests no route takes (404, 405) are logged too, outside the routes' middleware. The metrics wrap
    # everything, once: current for every access log line, and each request in flight counted once.
    app.asgi_handler = metrics.middleware(unrouted_access_log(app.asgi_handler))
    return app


def _lifespan(
    services: Services, engine: AsyncEngine, on_shutdown: Sequence[Callable[[], None]], *, serving: bool
) -> Callable[[Litestar], AbstractAsyncContextManager[None]]:
    """Build the clients the app owns (those not handed in) on startup, and close them on shutdown."""
    settings = services.settings
    owns_embedder = services.embedder is None

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncGenerator[None, None]:
        if services.embedder is None:
            built = await build_embedder(settings)
            services.embedder = with_query_cache(built, settings.query_cache_size, settings.query_cache_ttl_s)
        owns_chat = services.chat is None
        if owns_chat:
            services.chat = build_chat_provider(settings, services.counter)
        services.offline = OfflineModel(services.counter)
        maintenance = service_maintenance(settings, services.clock)  # None unless an interval is set
        app.state.maintenance = maintenance
        if maintenance is not None:
            maintenance.start()
        if services.reinforcements is not None:
            services.reinforcements.start()
        if serving:
            tune_for_serving()
        try:
            yield
        finally:
            if maintenance is not None:
                await maintenance.stop()
            await _close(services, owns_embedder=owns_embedder, owns_chat=owns_chat)
            await engine.dispose()
            for hook in on_shutdown:
                hook()

    return lifespan


def _deliveries(deliverer: Deliverer | None) -> Callable[[Litestar], AbstractAsyncContextManager[None]]:
    """Run the webhook deliverer while the app serves (stopped before the engine is disposed)."""

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncGenerator[None, None]:
        if deliverer is not None:
            deliverer.start()
        try:
            yield
        finally:
            if deliverer is not None:
                await deliverer.stop()

    return lifespan


async def _close(services: Services, *, owns_embedder: bool, owns_chat: bool) -> None:
    if services.reinforcements is not None:
        await services.reinforcements.stop()  # flushes what recalls noted
    if owns_embedder and services.embedder is not None:
        await services.embedder.aclose()
        services.embedder = None
    if owns_chat and services.chat is not None:
        await services.chat.aclose()
        services.chat = None
    services.terms.stop_reading()  # reads into the term index run on spare connections
    if services.spare is not None:
        await services.spare.dispose()
    if services.limiter is not None:
        await services.limiter.dispose()
