"""Webhooks and their outbox (`webhook_deliveries`, filled by the fan-out trigger of migration 0010).

Everything here runs in a transaction bound to one tenant, like every other statement, but
`due_tenants`, which asks a SECURITY DEFINER function which tenants have deliveries due (tenant ids,
nothing else). A claim leases its rows (`next_attempt_at` moves past the attempt's timeout) under
FOR UPDATE SKIP LOCKED and commits before any HTTP request is made, so several workers never send the
same attempt, no transaction stays open across a request, and a worker that dies mid-attempt only
delays that delivery until its lease ends. An outcome is written only if the row is still the same
attempt (`attempts` unchanged).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Webhook, WebhookDelivery
from app.store.pages import Keyset, Page, keyset_page
from app.tenancy.types import TenantId

PENDING, DELIVERED, DEAD = "pending", "delivered", "dead"


@dataclass(frozen=True, slots=True)
class Claim:
    """One leased attempt: what to send, where, and which attempt it is."""

    delivery_id: int
    webhook_id: uuid.UUID
    event_id: int
    attempts: int
    event: dict[str, Any]
    url: str


_DUE_TENANTS = text("SELECT engram_webhook_due_tenants(:limit)")

_CLAIM = text(
    """WITH c AS (
           SELECT d.id FROM webhook_deliveries d
           WHERE d.tenant_id = :tenant AND d.state = 'pending' AND d.next_attempt_at <= now()
           ORDER BY d.next_attempt_at, d.id LIMIT :limit
           FOR UPDATE OF d SKIP LOCKED
       )
       UPDATE webhook_deliveries d
       SET attempts = d.attempts + 1, last_attempt_at = now(),
           next_attempt_at = now() + make_interval(secs => CAST(:lease AS double precision))
       FROM c, webhooks w
       WHERE d.tenant_id = :tenant AND d.id = c.id AND w.tenant_id = :tenant AND w.id = d.webhook_id
       RETURNING d.id, d.webhook_id, d.event_id, d.attempts, d.event, w.url"""
)

_OUTCOME = text(
    """UPDATE webhook_deliveries
       SET state = CAST(:state AS varchar), last_status = :status, last_error = :error,
           delivered_at = CASE WHEN CAST(:state AS varchar) = 'delivered' THEN now() END,
           next_attempt_at = now() + make_interval(secs => CAST(:delay AS double precision))
       WHERE tenant_id = :tenant AND id = :id AND attempts = :attempts AND state = 'pending'"""
)

# A notice with no row in memory_events (the erase of a whole user or project leaves no audit trail):
# an event id from the same sequence, so receivers deduplicate it like any other.
_ENQUEUE = text(
    """WITH e AS (SELECT nextval(pg_get_serial_sequence('memory_events', 'id')) AS id)
       INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_id, kind, event, next_attempt_at)
       SELECT w.tenant_id, w.id, e.id, CAST(:kind AS varchar), CAST(:event AS jsonb), now()
       FROM webhooks w, e
       WHERE w.tenant_id = :tenant AND w.active
         AND (cardinality(w.event_types) = 0 OR CAST(:kind AS text) = ANY (w.event_types))"""
)


async def due_tenants(session: AsyncSession, limit: int) -> list[TenantId]:
    """Tenants with at least one delivery due now (any tenant; ids only)."""
    rows = await session.execute(_DUE_TENANTS, {"limit": limit})
    return [TenantId(row[0]) for row in rows]


class WebhookStore:
    """One tenant's webhooks and deliveries."""

    def __init__(self, session: AsyncSession, tenant: TenantId) -> None:
        self.session = session
        self.tenant = tenant

    async def add(self, url: str, description: str | None, event_types: Sequence[str]) -> Webhook:
        hook = Webhook(
            tenant_id=self.tenant,
            id=uuid.uuid4(),
            url=url,
            description=description,
            event_types=list(event_types),
            active=True,
        )
        self.session.add(hook)
        await self.session.flush()
        await self.session.refresh(hook)
        return hook

    async def count(self) -> int:
        query = select(func.count()).select_from(Webhook).where(Webhook.tenant_id == self.tenant)
        return int(await self.session.scalar(query) or 0)

    async def all(self) -> list[Webhook]:
        query = (
            select(Webhook)
            .where(Webhook.tenant_id == self.tenant)
            .order_by(Webhook.created_at.desc(), Webhook.id.desc())
        )
        return list((await self.session.scalars(query)).all())

    async def remove(self, webhook_id: uuid.UUID) -> Webhook | None:
        """Delete a webhook (its pending deliveries and dead letters go with it)."""
        result = await self.session.scalars(
            delete(Webhook)
            .where(Webhook.tenant_id == self.tenant, Webhook.id == webhook_id)
            .returning(Webhook)
        )
        return result.one_or_none()

    async def dead_letters(self, webhook_id: uuid.UUID | None, keyset: Keyset) -> Page[WebhookDelivery]:
        query = select(WebhookDelivery).where(
            WebhookDelivery.tenant_id == self.tenant, WebhookDelivery.state == DEAD
        )
        if webhook_id is not None:
            query = query.where(WebhookDelivery.webhook_id == webhook_id)
        return await keyset_page(self.session, query, WebhookDelivery, keyset)

    async def redeliver(self, delivery_id: int) -> WebhookDelivery | None:
        """Queue a dead letter again, with a fresh set of attempts; None if there is no such dead letter."""
        result = await self.session.scalars(
            update(WebhookDelivery)
            .where(
                WebhookDelivery.tenant_id == self.tenant,
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.state == DEAD,
            )
            .values(state=PENDING, attempts=0, next_attempt_at=text("now()"))
            .returning(WebhookDelivery)
        )
        return result.one_or_none()

    async def delivery(self, delivery_id: int) -> WebhookDelivery | None:
        return await self.session.scalar(
            select(WebhookDelivery).where(
                WebhookDelivery.tenant_id == self.tenant, WebhookDelivery.id == delivery_id
            )
        )

    async def enqueue(self, kind: str, event: dict[str, Any]) -> None:
        """Announce an event that has no audit row to every matching webhook of the tenant."""
        await self.session.execute(
            _ENQUEUE, {"tenant": self.tenant, "kind": kind, "event": json.dumps(event)}
        )

    async def claim(self, limit: int, lease_s: float) -> list[Claim]:
        rows = await self.session.execute(_CLAIM, {"tenant": self.tenant, "limit": limit, "lease": lease_s})
        return [Claim(r.id, r.webhook_id, r.event_id, r.attempts, r.event, r.url) for r in rows]

    async def settle(
        self, claim: Claim, *, state: str, status: int | None, error: str | None, delay_s: float
    ) -> None:
        """Write an attempt's outcome: delivered, pending again after `delay_s`, or dead."""
        await self.session.execute(
            _OUTCOME,
            {
                "tenant": self.tenant,
                "id": claim.delivery_id,
                "attempts": claim.attempts,
                "state": state,
                "status": status,
                "error": None if error is None else error[:200],
                "delay": delay_s,
            },
        )
