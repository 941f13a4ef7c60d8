"""What an operator or a first-time user reaches without a key: `GET /`, `/metrics`, the API docs.

The docs pages load Swagger UI from the `swagger-ui-bundle-v2` package's files, served by the service at
`/schema/assets/`, so they render offline (no CDN). ReDoc is not offered: no registry package ships its
standalone script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import swagger_ui_bundle  # type: ignore[import-untyped]
from litestar import Request, Response, get
from litestar.config.app import AppConfig
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin
from litestar.plugins import InitPluginProtocol
from litestar.static_files import create_static_files_router

from app.api.openapi_doc import finish_document
from app.lib.metrics import Metrics

SCHEMA_PATH = "/schema"
ASSETS_PATH = f"{SCHEMA_PATH}/assets"
VERSION = "0.1.0"

# Linked from `GET /`; the inspector is served by its own module under /inspector.
LINKS = {
    "docs": SCHEMA_PATH,
    "openapi": f"{SCHEMA_PATH}/openapi.json",
    "health": "/health",
    "ready": "/ready",
    "metrics": "/metrics",
    "inspector": "/inspector",
}


def swagger_assets_dir() -> Path:
    return Path(swagger_ui_bundle.swagger_ui_path)


class _JsonDocument(JsonRenderPlugin):
    """The document with what Litestar leaves out (app/api/openapi_doc.py)."""

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, finish_document(openapi_schema))


class _Swagger(SwaggerRenderPlugin):
    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, finish_document(openapi_schema))


def openapi_config() -> OpenAPIConfig:
    """Swagger UI at /schema (and /schema/swagger) from local assets; the document at /schema/openapi.json."""
    swagger = _Swagger(
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",
        path=["/", "/swagger"],
    )
    return OpenAPIConfig(
        title="Engram",
        version=VERSION,
        path=SCHEMA_PATH,
        render_plugins=[swagger, _JsonDocument()],
    )


@get("/", include_in_schema=False)
async def index() -> dict[str, object]:
    """A small index of where things are, instead of a bare 404."""
    return {"service": "engram", "version": VERSION, "links": LINKS}


@get("/metrics", include_in_schema=False)
async def metrics_endpoint(state: State) -> Response[bytes]:
    metrics: Metrics = state.metrics
    body, content_type = metrics.render()
    return Response(body, media_type=content_type)


class OperationsPlugin(InitPluginProtocol):
    """Registers the index, the docs (config and assets) and the metrics (route and state). The metrics'
    middleware wraps the whole app (`create_app`), so that requests no route takes are counted too."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.route_handlers.extend(
            [
                index,
                metrics_endpoint,
                create_static_files_router(
                    path=ASSETS_PATH, directories=[swagger_assets_dir()], name="docs-assets"
                ),
            ]
        )
        app_config.openapi_config = openapi_config()
        app_config.state["metrics"] = self.metrics
        app_config.on_shutdown.append(self.metrics.close)
        return app_config
