"""/v1/export, /v1/import, /v1/reembed and /v1/users/{user_id}/erase: HTTP <-> portability and privacy."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, Response, Router, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter, QueryParameter

from app.api.guards import require_bearer
from app.api.schemas import NO_NUL, EraseReceipt, Ident, Strict
from app.portability.document import encode_document
from app.portability.service import MAX_REEMBED, PortabilityService
from app.privacy.erase import Eraser

MaybeIdent = Annotated[str | None, QueryParameter(max_length=200, pattern=NO_NUL)]
PathIdent = Annotated[str, Parameter(min_length=1, max_length=200, pattern=NO_NUL)]
ExportFormat = Annotated[Literal["json", "markdown"], QueryParameter()]
Portability = NamedDependency[PortabilityService]


class ImportOut(msgspec.Struct, kw_only=True):
    imported: int
    deduplicated: int
    superseded: int
    mismatched: int
    remapped: int
    events: int
    proposals: int


class ReembedIn(Strict):
    user_id: Ident | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_REEMBED)] = MAX_REEMBED


class ReembedOut(msgspec.Struct, kw_only=True):
    reembedded: int
    remaining: int


class EraseIn(Strict):
    project_id: Ident | None = None


class EraseUserIn(Strict):
    user_id: Ident
    project_id: Ident | None = None


class PortabilityController(Controller):
    path = "/v1"
    guards = [require_bearer]
    tags = ["portability"]

    @get("/export", description="Every memory of a user (or the tenant) with vectors, events, proposals.")
    async def export(
        self,
        portability: Portability,
        user_id: MaybeIdent = None,
        project_id: MaybeIdent = None,
        format: ExportFormat = "json",
    ) -> Response[Any]:
        if format == "markdown":
            text = await portability.export_markdown(user_id, project_id)
            return Response(content=text, media_type="text/markdown; charset=utf-8")
        document = await portability.export(user_id, project_id)
        return Response(content=encode_document(document), media_type="application/json")

    @post("/reembed", status_code=200)
    async def reembed(self, portability: Portability, data: JSONBody[ReembedIn | None] = None) -> ReembedOut:
        body = data or ReembedIn()
        result = await portability.reembed(body.user_id, body.limit)
        return ReembedOut(reembedded=result.reembedded, remaining=result.remaining)


class ImportController(Controller):
    """Mounted under a router with its own, larger body limit (`ENGRAM_MAX_IMPORT_BYTES`)."""

    path = "/v1"
    guards = [require_bearer]
    tags = ["portability"]

    @post("/import", status_code=200, description="A JSON export (GET /v1/export); all or nothing.")
    async def import_document(self, request: Request[Any, Any, State], portability: Portability) -> ImportOut:
        result = await portability.import_raw(await request.body())
        return ImportOut(**asdict(result))


def import_router(max_bytes: int) -> Router:
    """The import route with its own body limit (an export with vectors outgrows the 1 MiB default)."""
    return Router(path="/", route_handlers=[ImportController], request_max_body_size=max_bytes)


class PrivacyController(Controller):
    path = "/v1"
    guards = [require_bearer]
    tags = ["privacy"]

    @post("/users/{user_id:str}/erase", status_code=200)
    async def erase(
        self, user_id: PathIdent, eraser: NamedDependency[Eraser], data: JSONBody[EraseIn | None] = None
    ) -> EraseReceipt:
        receipt = await eraser.erase_user(user_id, (data or EraseIn()).project_id)
        return EraseReceipt(**receipt.as_dict())

    @post("/erase", status_code=200, description="The same erase for user ids a path cannot carry ('/').")
    async def erase_by_body(
        self, data: JSONBody[EraseUserIn], eraser: NamedDependency[Eraser]
    ) -> EraseReceipt:
        receipt = await eraser.erase_user(data.user_id, data.project_id)
        return EraseReceipt(**receipt.as_dict())
