"""/v1/webhooks (endpoints, dead letters, redelivery) and /v1/events/stream (server-sent events).
HTTP <-> WebhookService and the stream only."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Annotated

from litestar import Controller, Request, delete, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody, Parameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from app.api.guards import require_bearer
from app.api.memories import Limit, MaybeIdent
from app.api.webhook_schemas import (
    DeliveryOut,
    DeliveryPage,
    WebhookCreated,
    WebhookIn,
    WebhookList,
    WebhookOut,
)
from app.lib.errors import ValidationFailed
from app.tenancy.auth import Principal
from app.webhooks import stream
from app.webhooks.service import WebhookService

Hooks = NamedDependency[WebhookService]
# Ids of deliveries and events are PostgreSQL bigints: a larger number is a 422, not an overflow.
BIGINT_MAX = 2**63 - 1
DeliveryId = Annotated[int, Parameter(ge=1, le=BIGINT_MAX)]
EventIdQuery = Annotated[int | None, Parameter(ge=0, le=BIGINT_MAX)]
LastEventId = Annotated[str | None, HeaderParameter(name="last-event-id", required=False, max_length=20)]


class WebhookController(Controller):
    path = "/v1/webhooks"
    guards = [require_bearer]
    tags = ["events"]

    @post("/", status_code=201)
    async def create(self, data: JSONBody[WebhookIn], webhooks: Hooks) -> WebhookCreated:
        created = await webhooks.create(
            data.url, description=data.description, event_types=[str(k) for k in data.event_types]
        )
        return WebhookCreated(webhook=WebhookOut.of(created.webhook), secret=created.secret)

    @get("/")
    async def list_webhooks(self, webhooks: Hooks) -> WebhookList:
        return WebhookList(items=[WebhookOut.of(h) for h in await webhooks.all()])

    @delete("/{webhook_id:uuid}", status_code=200)
    async def delete_webhook(self, webhook_id: FromPath[uuid.UUID], webhooks: Hooks) -> WebhookOut:
        """Delete a webhook and what it still had to deliver; returns what was deleted."""
        return WebhookOut.of(await webhooks.delete(webhook_id))

    @get("/dead-letters")
    async def dead_letters(
        self,
        webhooks: Hooks,
        webhook_id: FromQuery[uuid.UUID | None] = None,
        limit: Limit = 50,
        cursor: MaybeIdent = None,
    ) -> DeliveryPage:
        page = await webhooks.dead_letters(webhook_id, limit=limit, cursor=cursor)
        return DeliveryPage(items=[DeliveryOut.of(d) for d in page.items], next_cursor=page.next_cursor)

    @post("/dead-letters/{delivery_id:int}/redeliver", status_code=200)
    async def redeliver(self, delivery_id: FromPath[DeliveryId], webhooks: Hooks) -> DeliveryOut:
        return DeliveryOut.of(await webhooks.redeliver(delivery_id))


class EventStreamController(Controller):
    path = "/v1/events"
    guards = [require_bearer]
    tags = ["events"]

    @get("/stream", media_type="text/event-stream")
    async def stream_events(
        self,
        request: Request[object, object, State],
        state: State,
        principal: NamedDependency[Principal],
        user_id: MaybeIdent = None,
        after: FromQuery[EventIdQuery] = None,
        last_event_id: LastEventId = None,
    ) -> ServerSentEvent:
        """The tenant's change events as they happen (after `Last-Event-ID`, or `after`, when given)."""
        if after is not None and after < 0:
            raise ValidationFailed("after must be an event id (0 or more)")
        after = _event_id(last_event_id) if last_event_id else after
        engine = state.engine
        if after is None:
            after = await stream.latest_event_id(engine, principal.tenant)
        poll_s = state.services.settings.event_stream_poll_s
        events = stream.events(engine, principal.tenant, user_id=user_id, after=after, poll_s=poll_s)
        return ServerSentEvent(_messages(events), headers={"cache-control": "no-store"})


def _event_id(header: str | None) -> int | None:
    if header is None or not header.strip():
        return None
    if not header.strip().isdigit() or int(header.strip()) > BIGINT_MAX:
        raise ValidationFailed("Last-Event-ID must be an event id this stream sent")
    return int(header.strip())


async def _messages(
    events: AsyncIterator[stream.StreamedEvent | None],
) -> AsyncIterator[ServerSentEventMessage]:
    yield ServerSentEventMessage(data=None, comment="connected", retry=3000)
    async for event in events:
        if event is None:
            yield ServerSentEventMessage(data=None, comment="keep-alive")
        else:
            yield ServerSentEventMessage(data=event.data, event=event.type, id=str(event.id))
