"""Admission of an authenticated request: the tenant's request bucket, a turn of this worker, and one of
the tenant's concurrency slots, in that order (app/store/limits.py holds the SQL).

1. Bucket: one statement on an autocommit connection of a small pool of its own (the request's
   transaction would hold the bucket row's lock to its end and serialise the tenant's requests).
   Empty: 429 `rate_limited` with Retry-After.
2. Turn (per worker, `worker_slots`, app/lib/fairness.py): at most that many requests of the worker
   work at once; a freed slot goes to the waiting tenant with the fewest in flight. A request that must
   wait hands its connection back first, so waiting requests hold none. None within `limit_queue_s`:
   429 `concurrency_limited`. A remote model call hands the turn back while it waits (`yielding`).
3. Concurrency slot (every process, `concurrent_requests`): an advisory lock of the request's own
   transaction. None free: the request waits (without its connection) up to `limit_queue_s`, then
   429 `concurrency_limited`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.agent.providers.base import ChatProvider, ChatTurn, Message, Tool
from app.lib.errors import ConcurrencyLimited, RateLimited
from app.lib.fairness import Turn, Turns
from app.lib.settings import Settings
from app.store.limits import (
    Admission,
    Limits,
    StoredCounts,
    admit,
    bind_and_claim,
    claim_slot,
    memories_stored,
    tokens_spent,
)
from app.tenancy.auth import Principal
from app.tenancy.types import TenantId

TURN_KEY = "engram.turn"
ADMISSION_KEY = "engram.admission"


def default_limits(settings: Settings) -> Limits:
    return Limits(
        requests_per_minute=settings.tenant_requests_per_minute,
        concurrent_requests=settings.tenant_concurrent_requests,
        max_memories=settings.tenant_max_memories,
        tokens_per_day=settings.tenant_tokens_per_day,
    )


class Limiter:
    """The process's admission control; `engine` is the bucket's autocommit pool."""

    def __init__(self, settings: Settings, engine: AsyncEngine) -> None:
        self.defaults = default_limits(settings)
        self.queue_s = settings.limit_queue_s
        self.engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._owned = engine
        self.turns = Turns(settings.worker_slots) if settings.worker_slots > 0 else None
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
        holds_slot = principal.slot is not None and principal.slot > 0
        bound = True  # the transaction authentication began is bound to the tenant
        if self.turns is not None:
            if not self.turns.admits(tenant):
                await _hand_back(session)  # the slot and the binding go with the transaction
                holds_slot = bound = False
            turn = await self.turns.take(tenant, self.queue_s)
            if turn is None:
                raise ConcurrencyLimited(f"no turn of this worker came within {self.queue_s:g} s; retry", 1.0)
            state[TURN_KEY] = turn
        if not bound or (admission.limits.concurrent_requests > 0 and not holds_slot):
            await self._claim(session, tenant, admission.limits, bound, deadline, state)
        state[ADMISSION_KEY] = admission
        return admission

    async def _claim(
        self,
        session: AsyncSession,
        tenant: TenantId,
        limits: Limits,
        bound: bool,
        deadline: float,
        state: MutableMapping[str, Any],
    ) -> None:
        """Bind the transaction to `tenant` unless it is (`bound`) and take one of its concurrency slots,
        waiting without a connection while all are held. A new transaction is bound and claims in one
        statement (`engram_claim_slot`), so a request that waited for its turn costs one round trip more,
        not two."""
        pause = 0.005
        while True:
            if bound:
                taken = await claim_slot(session, tenant, limits.concurrent_requests)
            else:
                taken = await bind_and_claim(session, tenant, self.defaults.concurrent_requests) >= 0
                bound = True
            if taken:
                return
            if time.monotonic() + pause > deadline:
                raise _busy(limits)
            await _hand_back(session)
            bound = False
            async with _paused(state.get(TURN_KEY)):  # the tenant's own wait: not the worker's work
                await asyncio.sleep(pause * (0.5 + random.random()))  # noqa: S311 (jitter, not a secret)
            pause = min(pause * 2, 0.1)


def _busy(limits: Limits) -> ConcurrencyLimited:
    return ConcurrencyLimited(
        f"the tenant's requests in flight stayed at its limit ({limits.concurrent_requests}); retry", 1.0
    )


async def _hand_back(session: AsyncSession) -> None:
    """End the transaction (nothing is written yet): its connection goes back to the pool meanwhile."""
    await session.rollback()


def _paused(turn: object) -> AbstractAsyncContextManager[None]:
    return turn.paused() if isinstance(turn, Turn) else nullcontext()


def release_admission(state: MutableMapping[str, Any]) -> None:
    """The request's turn back to the worker (after its commit)."""
    turn = state.pop(TURN_KEY, None)
    if isinstance(turn, Turn):
        turn.release()


class Yielding:
    """A remote chat provider whose calls hand the request's turn back while they wait for the model."""

    def __init__(self, provider: ChatProvider, turn: Turn) -> None:
        self._provider = provider
        self._turn = turn

    @property
    def model(self) -> str:
        return self._provider.model

    @property
    def mode(self) -> str:
        return self._provider.mode

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[Tool] | None = None, json_mode: bool = False
    ) -> ChatTurn:
        async with self._turn.paused():
            return await self._provider.complete(messages, tools=tools, json_mode=json_mode)

    async def aclose(self) -> None:
        await self._provider.aclose()


def yielding(provider: ChatProvider, state: MutableMapping[str, Any]) -> ChatProvider:
    """`provider`, handing the request's turn back during its calls unless it is the offline model
    (which computes in this process: its work is the worker's)."""
    turn = state.get(TURN_KEY)
    if provider.mode == "offline" or not isinstance(turn, Turn):
        return provider
    return Yielding(provider, turn)


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
