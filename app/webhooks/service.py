"""A tenant's webhooks: create (the secret is returned once), list, delete, dead letters, redeliver."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from app.context import RequestContext
from app.db.models import Webhook, WebhookDelivery
from app.lib.errors import Conflict, NotFound, ValidationFailed
from app.store.pages import Keyset, Page
from app.store.webhooks import WebhookStore
from app.webhooks.signing import SigningKey
from app.webhooks.targets import TargetRefused, check_target, check_url

MAX_WEBHOOKS = 20  # per tenant: every event is fanned out to each in the writer's transaction


@dataclass(frozen=True, slots=True)
class CreatedWebhook:
    webhook: Webhook
    secret: str


class WebhookService:
    def __init__(self, ctx: RequestContext, key: SigningKey) -> None:
        self.ctx = ctx
        self.key = key
        self.store = WebhookStore(ctx.session, ctx.tenant)

    async def create(
        self, url: str, *, description: str | None = None, event_types: Sequence[str] = ()
    ) -> CreatedWebhook:
        checked = check_url(url)
        try:
            await check_target(checked, allow_private=self.ctx.settings.webhook_allow_private)
        except TargetRefused as exc:
            raise ValidationFailed(str(exc)) from exc
        if await self.store.count() >= MAX_WEBHOOKS:
            raise Conflict(f"a tenant has at most {MAX_WEBHOOKS} webhooks; delete one first")
        hook = await self.store.add(checked, description, sorted(set(event_types)))
        return CreatedWebhook(hook, self.key.secret(hook.id))

    async def all(self) -> list[Webhook]:
        return await self.store.all()

    async def delete(self, webhook_id: uuid.UUID) -> Webhook:
        hook = await self.store.remove(webhook_id)
        if hook is None:
            raise NotFound(f"webhook {webhook_id} not found")
        return hook

    async def dead_letters(
        self, webhook_id: uuid.UUID | None, *, limit: int = 50, cursor: str | None = None
    ) -> Page[WebhookDelivery]:
        return await self.store.dead_letters(webhook_id, Keyset.parse(cursor, limit, int))

    async def redeliver(self, delivery_id: int) -> WebhookDelivery:
        delivery = await self.store.redeliver(delivery_id)
        if delivery is None:
            raise NotFound(f"dead letter {delivery_id} not found")
        return delivery
