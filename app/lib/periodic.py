"""A background job run now and then every interval inside the service's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable

from sqlalchemy.exc import SQLAlchemyError

from app.lib.logging import get_logger

log = get_logger("engram.periodic")


class PeriodicTask:
    """Runs `job` now and then every `interval_s` until stopped; a failed run is logged, not fatal."""

    def __init__(
        self, job: Callable[[], Awaitable[object]], interval_s: float, *, name: str = "maintenance"
    ) -> None:
        self.name = name
        self._job = job
        self._interval = interval_s
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.runs = 0
        # Set after every run, so a test can wait for one instead of sleeping. A threading.Event because
        # the lifespan (and this task) may run on another thread's loop than the one waiting.
        self.ran = threading.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"engram-{self.name}")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                await self._job()
            except (SQLAlchemyError, OSError) as exc:  # the database may be briefly away; try next time
                log.warning(f"{self.name}_failed", error_type=type(exc).__name__, exc_info=exc)
            self.runs += 1
            self.ran.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._interval)
