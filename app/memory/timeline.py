"""The timeline: what happened to a user's memories, newest first (who, when, what, why)."""

from __future__ import annotations

from app.context import RequestContext
from app.db.models import MemoryEvent
from app.lib.errors import ValidationFailed
from app.store.pages import Keyset, Page
from app.vocabulary import Scope


class Timeline:
    """Pages through one tenant's audit trail."""

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx

    async def page(
        self, user_id: str, *, project_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[MemoryEvent]:
        if not user_id.strip():
            raise ValidationFailed("user_id must not be empty")
        keyset = Keyset.parse(cursor, limit, int)
        return await self.ctx.store.events.page(Scope.of_user(self.ctx.tenant, user_id, project_id), keyset)
