"""Turns: how many requests of one process do their local work at once, shared out between tenants.

A worker is one event loop: every request in flight takes its turns on the same core, so a tenant with
48 requests in flight makes every other tenant's request wait behind 48 requests' worth of work at each
of its awaits. `Turns` bounds the requests in flight (`slots`) and, when a slot frees and several tenants
are waiting, gives it to the waiting tenant with the fewest requests in flight (first come first among
equals). It is work-conserving: a tenant alone gets every slot, and a waiting request is admitted as soon
as a slot frees. A tenant sending one request at a time is therefore never behind more than the requests
already running, however many another tenant queues.

A request that waits on something that is not this process's work (a remote model's answer) hands its
slot back for that time (`Turn.paused`), so a slow model never holds the worker.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

__all__ = ["Turn", "Turns"]


@dataclass(slots=True)
class _Waiter:
    seq: int
    future: asyncio.Future[None]


@dataclass(slots=True)
class _Tenant:
    running: int = 0
    waiting: deque[_Waiter] = field(default_factory=deque)
    seen: float = 0.0  # when it last asked for a turn


class Turns:
    """`slots` requests in flight at once for this process (one event loop), shared between tenants.

    A tenant counts as active while it has requests in flight or waiting, and for `active_s` after it
    last asked (a client sending one request after another is active between them). With one active
    tenant it may use every slot; with n, each may hold at most `slots // n` (at least one), and a freed
    slot goes to the waiting tenant with the fewest in flight.
    """

    def __init__(
        self, slots: int, *, active_s: float = 5.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if slots < 1:
            raise ValueError("Turns needs at least one slot")
        self.slots = slots
        self.active_s = active_s
        self._clock = clock
        self._free = slots
        self._tenants: dict[Hashable, _Tenant] = {}
        self._seq = itertools.count()

    @property
    def running(self) -> int:
        return self.slots - self._free

    def waiting(self) -> int:
        return sum(len(t.waiting) for t in self._tenants.values())

    def cap(self) -> int:
        """What one active tenant may hold now."""
        self._prune()
        return self._cap_for(len(self._tenants))

    def admits(self, who: Hashable) -> bool:
        """A request of `who` would be admitted at once."""
        self._prune()
        tenant = self._tenants.get(who)
        cap = self._cap_for(len(self._tenants) + (tenant is None))  # counting `who` as active
        running = tenant.running if tenant is not None else 0
        return self._free > 0 and running < cap and not self._eligible_waiters(cap)

    def _cap_for(self, active: int) -> int:
        return self.slots if active <= 1 else max(1, self.slots // active)

    async def take(self, who: Hashable, timeout_s: float | None) -> Turn | None:
        """A turn for `who`, waiting up to `timeout_s` (None: as long as it takes) for a slot; None when
        none freed in time."""
        return Turn(self, who) if await self._enter(who, timeout_s) else None

    async def _enter(self, who: Hashable, timeout_s: float | None) -> bool:
        admitted = self.admits(who)
        tenant = self._tenants.setdefault(who, _Tenant())
        tenant.seen = self._clock()
        if admitted:
            self._free -= 1
            tenant.running += 1
            return True
        waiter = _Waiter(next(self._seq), asyncio.get_running_loop().create_future())
        tenant.waiting.append(waiter)
        self._grant()  # a free slot another tenant's expiry just opened to it
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.shield(waiter.future)
        except TimeoutError:
            self._abandon(who, waiter)
            return False
        except BaseException:  # cancelled: leave the queue (or pass on a slot granted meanwhile)
            self._abandon(who, waiter)
            raise
        return True

    def _abandon(self, who: Hashable, waiter: _Waiter) -> None:
        if waiter.future.done() and not waiter.future.cancelled():
            self._give_back(who)  # granted as the wait ended: pass the slot on
            return
        waiter.future.cancel()
        self._tenants[who].waiting.remove(waiter)

    def _give_back(self, who: Hashable) -> None:
        tenant = self._tenants[who]
        tenant.running -= 1
        self._free += 1
        self._grant()

    def _grant(self) -> None:
        while self._free > 0:
            cap = self.cap()
            queued = self._eligible_waiters(cap)
            if not queued:
                return
            _, _, who = min(queued, key=lambda q: (q[0], q[1]))
            tenant = self._tenants[who]
            waiter = tenant.waiting.popleft()
            self._free -= 1
            tenant.running += 1
            waiter.future.set_result(None)

    def _eligible_waiters(self, cap: int) -> list[tuple[int, int, Hashable]]:
        """(in flight, first waiter's number, tenant) of every tenant that waits and is under `cap`."""
        return [
            (t.running, t.waiting[0].seq, who)
            for who, t in self._tenants.items()
            if t.waiting and t.running < cap
        ]

    def _prune(self) -> None:
        horizon = self._clock() - self.active_s
        idle = [w for w, t in self._tenants.items() if not t.running and not t.waiting and t.seen < horizon]
        for who in idle:
            del self._tenants[who]


class Turn:
    """One request's slot; `release` is idempotent."""

    __slots__ = ("_held", "_turns", "_who")

    def __init__(self, turns: Turns, who: Hashable) -> None:
        self._turns = turns
        self._who = who
        self._held = True

    @property
    def held(self) -> bool:
        return self._held

    def release(self) -> None:
        if self._held:
            self._held = False
            self._turns._give_back(self._who)

    @asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Hand the slot back while the block waits on something outside this process, then queue for
        it again (as long as it takes: the work that follows was admitted already)."""
        if not self._held:
            yield
            return
        self.release()
        try:
            yield
        finally:
            await self._retake()

    async def _retake(self) -> None:
        self._held = await self._turns._enter(self._who, None)  # no timeout: always True
