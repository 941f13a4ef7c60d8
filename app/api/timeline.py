"""/v1/timeline: a user's memory events, newest first. HTTP <-> Timeline only."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency

from app.api.convert import event_out
from app.api.dream_schemas import EventPage
from app.api.guards import require_bearer
from app.api.memories import Limit, MaybeIdent, QueryIdent
from app.memory.timeline import Timeline


class TimelineController(Controller):
    path = "/v1/timeline"
    guards = [require_bearer]
    tags = ["timeline"]

    @get("/")
    async def timeline(
        self,
        timeline: NamedDependency[Timeline],
        user_id: QueryIdent,
        project_id: MaybeIdent = None,
        limit: Limit = 50,
        cursor: MaybeIdent = None,
    ) -> EventPage:
        page = await timeline.page(user_id, project_id=project_id, limit=limit, cursor=cursor)
        return EventPage(items=[event_out(e) for e in page.items], next_cursor=page.next_cursor)
