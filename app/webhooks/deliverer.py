"""The deliverer: in every worker, now and then, send the outbox's due deliveries.

Per tick: ask which tenants have deliveries due; per tenant, lease a batch (one short transaction),
POST each (signed, concurrently, no transaction open), then write the outcomes (another short
transaction). A 2xx is delivered; anything else (a refused connection, a timeout, a 5xx, a 4xx, a
redirect, a target that now resolves to a private address) is retried after an exponential backoff with
jitter, and after `webhook_max_attempts` attempts becomes a dead letter. Delivery is at least once; the
event id (`Engram-Event-Id`, and `id` in the body) is stable across retries, so a receiver that
deduplicates on it sees each event exactly once. Order across events is not guaranteed.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.session import set_tenant
from app.lib.logging import get_logger
from app.lib.periodic import PeriodicTask
from app.lib.settings import Settings
from app.store.webhooks import DEAD, DELIVERED, PENDING, Claim, WebhookStore, due_tenants
from app.tenancy.types import TenantId
from app.webhooks.payload import encode, envelope
from app.webhooks.signing import SigningKey, sign
from app.webhooks.targets import TargetRefused, check_target

log = get_logger("engram.webhooks")
TENANTS_PER_TICK = 100
BATCH = 50  # deliveries leased per tenant per tick
CONCURRENCY = 16
USER_AGENT = "Engram-Webhooks/1"


@dataclass(frozen=True, slots=True)
class Outcome:
    status: int | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def backoff_s(attempts: int, base_s: float, max_s: float, rand: random.Random | None = None) -> float:
    """The wait before the next attempt after `attempts` failed ones: base * 2^(attempts-1), capped,
    with jitter (between half and all of it), so receivers coming back are not hit by every retry at once."""
    delay = min(max_s, base_s * 2.0 ** max(0, attempts - 1))
    return float(delay * (0.5 + 0.5 * (rand or random).random()))


class Deliverer:
    """Sends due deliveries on the service's engine (role `engram_app`); `tick` is one round."""

    def __init__(self, engine: AsyncEngine, settings: Settings, key: SigningKey) -> None:
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._settings = settings
        self._key = key
        self._client: httpx.AsyncClient | None = None
        self._limit = asyncio.Semaphore(CONCURRENCY)
        self.task = PeriodicTask(self.tick, settings.webhook_interval_s, name="webhooks")

    def start(self) -> None:
        self.task.start()

    async def stop(self) -> None:
        await self.task.stop()
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self._settings.webhook_timeout_s, follow_redirects=False, trust_env=False
            )
        return self._client

    async def tick(self) -> int:
        """One round over every tenant with due deliveries; returns how many attempts were made."""
        async with self._sessions() as session, session.begin():
            tenants = await due_tenants(session, TENANTS_PER_TICK)
        made = 0
        for tenant in tenants:
            made += await self._tenant(tenant)
        return made

    async def _tenant(self, tenant: TenantId) -> int:
        lease = self._settings.webhook_timeout_s + 30.0
        async with self._sessions() as session, session.begin():
            await set_tenant(session, tenant)
            claims = await WebhookStore(session, tenant).claim(BATCH, lease)
        if not claims:
            return 0
        outcomes = await asyncio.gather(*(self._attempt(c) for c in claims))
        async with self._sessions() as session, session.begin():
            await set_tenant(session, tenant)
            store = WebhookStore(session, tenant)
            for claim, outcome in zip(claims, outcomes, strict=True):
                await self._settle(store, claim, outcome)
        return len(claims)

    async def _settle(self, store: WebhookStore, claim: Claim, outcome: Outcome) -> None:
        s = self._settings
        if outcome.delivered:
            state, delay = DELIVERED, 0.0
        elif claim.attempts >= s.webhook_max_attempts:
            state, delay = DEAD, 0.0
        else:
            state, delay = (
                PENDING,
                backoff_s(claim.attempts, s.webhook_backoff_base_s, s.webhook_backoff_max_s),
            )
        await store.settle(claim, state=state, status=outcome.status, error=outcome.error, delay_s=delay)
        # No URL (it may carry a token in its path) and no payload in the log.
        log.info(
            "webhook_attempt",
            webhook_id=str(claim.webhook_id),
            event_id=claim.event_id,
            attempt=claim.attempts,
            status=outcome.status,
            error=outcome.error,
            state=state,
        )

    async def _attempt(self, claim: Claim) -> Outcome:
        async with self._limit:
            try:
                await check_target(claim.url, allow_private=self._settings.webhook_allow_private)
            except TargetRefused as exc:
                return Outcome(None, f"refused: {exc}")
            body = encode(envelope(claim.event_id, claim.event))
            timestamp = int(time.time())
            headers = {
                "content-type": "application/json",
                "user-agent": USER_AGENT,
                "engram-event-id": str(claim.event_id),
                "engram-delivery-attempt": str(claim.attempts),
                "engram-timestamp": str(timestamp),
                "engram-signature": sign(self._key.secret(claim.webhook_id), timestamp, body),
            }
            try:
                response = await self._http().post(claim.url, content=body, headers=headers)
            except (httpx.HTTPError, httpx.InvalidURL, UnicodeError) as exc:
                # One receiver's failure is that delivery's outcome, never the deliverer's end.
                return Outcome(None, type(exc).__name__)
            await response.aclose()
            if 200 <= response.status_code < 300:
                return Outcome(response.status_code, None)
            return Outcome(response.status_code, f"HTTP {response.status_code}")
