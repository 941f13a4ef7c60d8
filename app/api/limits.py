"""Admission of a request: its key and the tenant's request bucket, a turn of this worker, and one of
the tenant's concurrency slots, in that order (app/store/limits.py holds the SQL).

1. Key and bucket: one statement on an autocommit connection of a small pool of its own (the request's
   transaction would hold the bucket row's lock to its end and serialise the tenant's requests).
   Unknown key: 401. Empty bucket: 429 `rate_limited` with Retry-After.
2. Turn (per worker, `worker_slots`, app/lib/fairness.py): at most that many requests of the worker
   work at once; a freed slot goes to the waiting tenant with the fewest in flight. The request's
   transaction has not begun, so waiting requests hold no connection. None within `limit_queue_s`:
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
from app.lib.errors import ConcurrencyLimited, RateLimited, Unauthorized
from app.lib.fairness import Turn, Turns
from app.lib.settings import Settings
from app.store.limits import (
    Admission,
    Limits,
    StoredCounts,
    authenticate_and_admit,
    bind_and_claim,
    memories_stored,
    tokens_spent,
)
from app.tenancy.auth import UNKNOWN_KEY, Principal, key_hash_of
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

    async def authenticate(self, authorization: str | None) -> tuple[Principal, Admission]:
        """The header's key resolved and one request taken from its tenant's bucket, in one statement on
        the bucket's autocommit pool (no transaction of the request's yet): 401 for an unknown key."""
        key_hash = key_hash_of(authorization)
        async with self.engine.connect() as conn:
            found = await authenticate_and_admit(conn, key_hash, self.defaults)
        if found is None:
            raise Unauthorized(UNKNOWN_KEY)
        tenant, key_id, admission = found
        return Principal(tenant, key_id), admission

    async def enter(
        self,
        session: AsyncSession,
        principal: Principal,
        admission: Admission,
        state: MutableMapping[str, Any],
    ) -> None:
        """Admit the authenticated request (`authenticate`'s answer) or raise a 429: the bucket's word,
        then a turn of this worker, then the request's transaction bound to the tenant with one of its
        concurrency slots. `state` (the request's) gets what releases it.

        The transaction begins only once the request has its turn: a request that waits holds no
        connection and has none to hand back."""
        tenant = principal.tenant
        if not admission.admitted:
            raise RateLimited(
                f"over the tenant's limit of {admission.limits.requests_per_minute} requests per minute",
                admission.retry_after_s,
            )
        deadline = time.monotonic() + self.queue_s
        if self.turns is not None:
            turn = await self.turns.take(tenant, self.queue_s)
            if turn is None:
                raise ConcurrencyLimited(f"no turn of this worker came within {self.queue_s:g} s; retry", 1.0)
            state[TURN_KEY] = turn
        await self._claim(session, tenant, admission.limits, deadline, state)
        state[ADMISSION_KEY] = admission

    async def _claim(
        self,
        session: AsyncSession,
        tenant: TenantId,
        limits: Limits,
        deadline: float,
        state: MutableMapping[str, Any],
    ) -> None:
        """Bind the transaction to `tenant` and take one of its concurrency slots in one statement
        (`engram_claim_slot`), waiting without a connection while all are held."""
        pause = 0.005
        while True:
            if await bind_and_claim(session, tenant, self.defaults.concurrent_requests) >= 0:
                return
            if time.monotonic() + pause > deadline:
                raise _busy(limits)
            await _hand_back(session)
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
