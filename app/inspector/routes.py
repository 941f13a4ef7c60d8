"""Serves the inspector's page and modules (no build step, no CDN) and locks the page to this origin."""

from __future__ import annotations

from pathlib import Path

from litestar import Router, get
from litestar.datastructures import CacheControlHeader
from litestar.response import Redirect
from litestar.static_files import create_static_files_router
from litestar.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"
PATH = "/inspector"

# The page talks to this origin only: scripts, styles, fetches and images from here (downloads are blob:
# URLs the page made), nothing inline, never framed. A browser then refuses any other host outright.
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self' data: blob:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def security_headers(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await app(scope, receive, send_wrapper)

    return middleware


@get("/demo", include_in_schema=False)
async def demo() -> Redirect:
    """The contract's first name for the inspector (../shared/API.md): kept, pointing here."""
    return Redirect(f"{PATH}/")


def inspector_router() -> Router:
    """`/inspector` (and `/inspector/`) serve index.html; `/inspector/js/...` the modules beside it."""
    static = create_static_files_router(
        path=PATH,
        directories=[STATIC],
        html_mode=True,
        name="inspector",
        # Revalidated on every load (ETag / Last-Modified): an upgraded service never runs stale modules.
        cache_control=CacheControlHeader(no_cache=True),
        middleware=[security_headers],
    )
    return Router(path="/", route_handlers=[static, demo])
