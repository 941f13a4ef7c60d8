"""Portability facade for one tenant: export (JSON, Markdown), import, re-embed. Flushes, never commits."""

from __future__ import annotations

from app.context import RequestContext
from app.lib.errors import ValidationFailed
from app.portability.document import ExportDocument, parse_document
from app.portability.exporter import export_document
from app.portability.importer import Importer, ImportResult, Progress
from app.portability.markdown import render_markdown
from app.portability.reembed import Reembedder, ReembedResult
from app.store.portability import PortabilityStore

MAX_REEMBED = 100_000


class PortabilityService:
    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.repo = PortabilityStore(ctx.session, ctx.tenant)

    async def export(self, user_id: str | None, project_id: str | None = None) -> ExportDocument:
        if project_id is not None and user_id is None:
            raise ValidationFailed("project_id needs a user_id")
        return await export_document(
            self.repo,
            user_id=user_id,
            project_id=project_id,
            embed_model=self.ctx.embedder.name,
            now=self.ctx.clock.now(),
        )

    async def export_markdown(self, user_id: str | None, project_id: str | None = None) -> str:
        return render_markdown(await self.export(user_id, project_id))

    async def import_raw(self, raw: bytes, progress: Progress | None = None) -> ImportResult:
        """Parse and import one JSON export; any error leaves the transaction to be rolled back."""
        doc = parse_document(raw, max_depth=self.ctx.settings.max_json_depth)
        return await self.import_document(doc, progress)

    async def import_document(self, doc: ExportDocument, progress: Progress | None = None) -> ImportResult:
        return await Importer(self.ctx, progress).run(doc)

    async def reembed(self, user_id: str | None, limit: int = MAX_REEMBED) -> ReembedResult:
        if not 1 <= limit <= MAX_REEMBED:
            raise ValidationFailed(f"limit must be between 1 and {MAX_REEMBED}")
        return await Reembedder(self.ctx).run(user_id, limit)
