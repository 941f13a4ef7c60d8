"""Admission of an authenticated request: the tenant's request bucket, its fair share of this process's
pool, and one of its concurrency slots, in that order (app/store/limits.py holds the SQL).

1. Bucket: one statement on an autocommit connection of a small pool of its own (the request's
   transaction would hold the bucket row's lock to its end and serialise the tenant's requests).
   Empty: 429 `rate_limited` with Retry-After.
2. Fair share (per process, `tenant_pool_share`): a tenant holds at most that share of the request
   pool's connections. A request past it hands its connection back before it waits, so the tenant's
   queue holds no connection and another tenant's request still finds one.
3. Concurrency slot (every process, `concurrent_requests`): an advisory lock of the request's own
   transaction. None free: the request waits (without its connection) up to `limit_queue_s`, then
   429 `concurrency_limited`.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.db.session import set_tenant
from app.lib.errors import ConcurrencyLimited, RateLimited
from app.lib.settings import Settings
from app.store.limits import (
    Admission,
    Limits,
    StoredCounts,
    admit,
    claim_slot,
    memories_stored,
    tokens_spent,
)
from app.tenancy.auth import Principal
from app.tenancy.types import TenantId

RELEASE_KEY = "engram.release_admission"
ADMISSION_KEY = "engram.admission"


def default_limits(settings: Settings) -> Limits:
    return Limits(
        requests_per_minute=settings.tenant_requests_per_minute,
        concurrent_requests=settings.tenant_concurrent_requests,
        max_memories=settings.tenant_max_memories,
        tokens_per_day=settings.tenant_tokens_per_day,
    )


def fair_share(settings: Settings) -> int:
    """Connections of this process's request pool one tenant may hold (0: no cap)."""
    if settings.tenant_pool_share <= 0:
        return 0
    return max(1, math.floor(settings.tenant_pool_share * (settings.db_pool_size + settings.db_max_overflow)))


@dataclass(slots=True)
class _Share:
    semaphore: asyncio.Semaphore
    users: int = 0  # holders and waiters: the entry goes when none is left


@dataclass(slots=True)
class TenantShares:
    """Per-tenant semaphores of one process (one event loop)."""

    size: int
    _shares: dict[TenantId, _Share] = field(default_factory=dict)

    def free(self, tenant: TenantId) -> bool:
        share = self._shares.get(tenant)
        return share is None or not share.semaphore.locked()

    async def acquire(self, tenant: TenantId, wait_s: float) -> bool:
        share = self._shares.get(tenant)
        if share is None:
            share = self._shares[tenant] = _Share(asyncio.Semaphore(self.size))
        share.users += 1
        try:
            async with asyncio.timeout(wait_s):
                await share.semaphore.acquire()
        except TimeoutError:
            self._leave(tenant, share)
            return False
        except BaseException:
            self._leave(tenant, share)
            raise
        return True

    def release(self, tenant: TenantId) -> None:
        share = self._shares[tenant]
        share.semaphore.release()
        self._leave(tenant, share)

    def _leave(self, tenant: TenantId, share: _Share) -> None:
        share.users -= 1
        if share.users == 0:
            del self._shares[tenant]


class Limiter:
    """The process's admission control; `engine` is the bucket's autocommit pool."""

    def __init__(self, settings: Settings, engine: AsyncEngine) -> None:
        self.defaults = default_limits(settings)
        self.queue_s = settings.limit_queue_s
        self.engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._owned = engine
        share = fair_share(settings)
        self.shares = TenantShares(share) if share > 0 else None
        self.stored = StoredCounts()

    async def dispose(self) -> None:
        await self._owned.dispose()

    async def admit(
        self, session: AsyncSession, principal: Principal, state: MutableMapping[str, Any]
    ) -> Admission:
        """Admit the request or raise a 429; `state` (the request's) gets what releases it.

        `principal.slot` is the concurrency slot authentication took (`authenticate(..., slots)`).
        """
        tenant = principal.tenant
        async with self.engine.connect() as conn:
            admission = await admit(conn, tenant, self.defaults)
        if not admission.admitted:
            raise RateLimited(
                f"over the tenant's limit of {admission.limits.requests_per_minute} requests per minute",
                admission.retry_after_s,
            )
        deadline = time.monotonic() + self.queue_s
        slots = admission.limits.concurrent_requests
        holds_slot = principal.slot is not None and principal.slot > 0
        if self.shares is not None:
            waits = not self.shares.free(tenant)
            if waits:
                await _hand_back(session)  # the slot goes with the transaction
                holds_slot = False
            if not await self.shares.acquire(tenant, self.queue_s):
                raise _busy(admission.limits)
            state[RELEASE_KEY] = _releaser(self.shares, tenant)
            if waits:
                await set_tenant(session, tenant)
        if slots > 0 and not holds_slot:
            pause = 0.005
            while not await claim_slot(session, tenant, slots):
                if time.monotonic() + pause > deadline:
                    raise _busy(admission.limits)
                await _hand_back(session)
                await asyncio.sleep(pause * (0.5 + random.random()))  # noqa: S311 (jitter, not a secret)
                pause = min(pause * 2, 0.1)
                await set_tenant(session, tenant)
        state[ADMISSION_KEY] = admission
        return admission


def _busy(limits: Limits) -> ConcurrencyLimited:
    return ConcurrencyLimited(
        f"the tenant's requests in flight stayed at its limit ({limits.concurrent_requests}); retry", 1.0
    )


async def _hand_back(session: AsyncSession) -> None:
    """End the transaction (nothing is written yet): its connection goes back to the pool meanwhile."""
    await session.rollback()


def _releaser(shares: TenantShares, tenant: TenantId) -> Callable[[], None]:
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            shares.release(tenant)

    return release


def release_admission(state: MutableMapping[str, Any]) -> None:
    release = state.pop(RELEASE_KEY, None)
    if release is not None:
        release()


async def usage_against_limits(session: AsyncSession, tenant: TenantId, admission: object) -> dict[str, Any]:
    """`limits` of GET /v1/usage: each limit (0: unlimited) beside what the tenant uses of it now."""
    if not isinstance(admission, Admission):  # no admission control in this service
        return {}
    limits = admission.limits
    return {
        **limits.as_dict(),
        "requests_available": admission.bucket_tokens,  # left in the bucket after this request
        "memories_stored": await memories_stored(session, tenant),
        "tokens_last_24h": (await tokens_spent(session, tenant)).spent,
    }
