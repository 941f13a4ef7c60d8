"""`/mcp`: the MCP server over streamable HTTP, mounted in the service's Litestar app.

- Auth: the tenant's API key is the bearer token. `KeyVerifier` (the SDK's `TokenVerifier`) resolves it
  with the same lookup as a REST request (`app.tenancy.auth.authenticate`); no key, a malformed one or
  a wrong one is a 401 from the SDK's bearer middleware, before any MCP message is read.
- DNS-rebinding protection: the SDK's transport security with the configured allowed hosts and origins
  (`ENGRAM_MCP_ALLOWED_HOSTS`, `ENGRAM_MCP_ALLOWED_ORIGINS`): another Host is a 421, another Origin a 403.
- Stateless mode with JSON responses: every POST carries its own call and gets one JSON answer, no
  server-side session. That is what lets `engram serve --workers N` serve `/mcp`: consecutive requests
  of one client may reach different worker processes, and none needs state another one holds.
- The user: the `X-Engram-User` header, else the `user_id` query parameter, else `ENGRAM_MCP_USER`.
  The agent: the `X-Engram-Agent` header, else the `agent_id` query parameter, else none (set by the
  client's configuration like the user, never by a tool's arguments).
- The app's lifespan runs the SDK's session manager (`McpHttp.lifespan`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from urllib.parse import parse_qs

from litestar import Litestar
from litestar.handlers import ASGIRouteHandler, asgi
from litestar.types import HTTPResponseBodyEvent, HTTPResponseStartEvent, Receive, Scope, Send
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.lib.errors import Unauthorized
from app.mcp.local import Caller, LocalRunner, check_agent, check_user
from app.mcp.server import build_server
from app.state import Services
from app.tenancy.auth import authenticate

PATH = "/mcp"
USER_HEADER = b"x-engram-user"
AGENT_HEADER = b"x-engram-agent"
_USER: ContextVar[str | None] = ContextVar("engram_mcp_user", default=None)
_AGENT: ContextVar[str | None] = ContextVar("engram_mcp_agent", default=None)


class KeyVerifier:
    """A bearer token is valid when it is a live API key; the token's subject is its tenant."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            async with self.sessions() as session, session.begin():
                principal = await authenticate(session, f"Bearer {token}")
        except Unauthorized:
            return None
        return AccessToken(
            token=token, client_id=f"key:{principal.key_id}", scopes=[], subject=str(principal.tenant)
        )


def _current_caller(default_user: str) -> Caller:
    token = get_access_token()
    if token is None:  # the bearer middleware lets no unauthenticated request through
        raise Unauthorized("missing Authorization header (expected 'Bearer <api key>')")
    requested = _USER.get()
    user_id = default_user if requested is None else check_user(requested)
    return Caller(key=token.token, user_id=user_id, agent_id=check_agent(_AGENT.get()))


def _requested(scope: Scope, header: bytes, parameter: str) -> str | None:
    for name, value in scope.get("headers", []):
        if name == header:
            return str(value.decode("latin-1"))
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return query[parameter][0] if query.get(parameter) else None


async def _no_stream(send: Send) -> None:
    body = b'{"error": "method_not_allowed", "detail": "POST JSON-RPC messages to /mcp; it offers no stream"}'
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 405,
        "headers": [(b"content-type", b"application/json"), (b"allow", b"POST, DELETE")],
    }
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(start)
    await send(end)


class McpHttp:
    """The mounted MCP app of one Litestar app: its route handler and its lifespan."""

    def __init__(self, services: Services, engine: AsyncEngine) -> None:
        settings = services.settings
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        default_user = settings.mcp_user
        runner = LocalRunner(services, sessions, lambda: _current_caller(default_user))
        self.server = build_server(runner)
        self.app = self.server.streamable_http_app(
            streamable_http_path="/",  # mounted at /mcp: the mount strips its path
            stateless_http=True,
            json_response=True,
            max_request_body_size=settings.max_body_bytes,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=settings.mcp_hosts(),
                allowed_origins=settings.mcp_origins(),
            ),
            # A resource server only: no OAuth routes, no metadata (no resource_server_url); the issuer
            # is required by the settings' type and unused without them.
            auth=AuthSettings(issuer_url="http://localhost", resource_server_url=None),  # type: ignore[arg-type]
            token_verifier=KeyVerifier(sessions),
        )

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["path_template"] = PATH  # the access log's and the metrics' route (the mount set "/")
        if scope.get("method") == "GET":
            # Stateless: there is no server-to-client stream to open; the SDK would hold the GET open
            # forever. The transport's answer for "no SSE stream here" is a 405.
            await _no_stream(send)
            return
        user = _USER.set(_requested(scope, USER_HEADER, "user_id"))
        agent = _AGENT.set(_requested(scope, AGENT_HEADER, "agent_id"))
        try:
            await self.app(scope, receive, send)  # type: ignore[arg-type]
        finally:
            _AGENT.reset(agent)
            _USER.reset(user)

    def route(self) -> ASGIRouteHandler:
        async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
            await self.handle(scope, receive, send)

        return asgi(PATH, is_mount=True, copy_scope=False)(mcp_endpoint)

    @asynccontextmanager
    async def lifespan(self, _: Litestar) -> AsyncIterator[None]:
        async with self.server.session_manager.run():
            yield
