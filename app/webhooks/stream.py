"""The live stream of a tenant's change events (`GET /v1/events/stream`, server-sent events).

Each poll reads the events after the cursor in its own short transaction bound to the tenant (no
connection is held between polls). Event ids come from a sequence taken before commit, so an event can
commit after one with a higher id was already sent: each poll therefore re-reads from the cursor as it
was `GRACE_S` ago and skips what it sent. An event whose transaction stayed open longer than that can
be missed by a stream (never by a webhook: the outbox is written in the event's own transaction).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db.models import MemoryEvent
from app.db.session import set_tenant
from app.store.events import EventRecorder
from app.tenancy.types import TenantId
from app.webhooks.payload import envelope, snapshot_of

GRACE_S = 30.0
BATCH = 500
KEEPALIVE_S = 15.0


@dataclass(frozen=True, slots=True)
class StreamedEvent:
    id: int
    type: str
    data: str  # the same JSON a webhook receives


async def latest_event_id(engine: AsyncEngine, tenant: TenantId) -> int:
    async with async_sessionmaker(engine)() as session, session.begin():
        await set_tenant(session, tenant)
        query = select(func.max(MemoryEvent.id)).where(MemoryEvent.tenant_id == tenant)
        return int(await session.scalar(query) or 0)


async def events(
    engine: AsyncEngine, tenant: TenantId, *, user_id: str | None, after: int, poll_s: float
) -> AsyncIterator[StreamedEvent | None]:
    """The tenant's events after `after`, oldest first, forever; None now and then as a keep-alive."""
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    cursor = after
    cursors: deque[tuple[float, int]] = deque()  # (when, cursor then): where a re-read starts
    sent: set[int] = set()
    quiet_since = time.monotonic()
    while True:
        now = time.monotonic()
        cursors.append((now, cursor))
        while len(cursors) > 1 and cursors[1][0] <= now - GRACE_S:
            cursors.popleft()
        floor = cursors[0][1]
        sent = {i for i in sent if i > floor}
        async with sessions() as session, session.begin():
            await set_tenant(session, tenant)
            recorder = EventRecorder(session, tenant, "stream")
            late = await recorder.since(floor, user_id, BATCH, upto=cursor, exclude=sorted(sent))
            rows = await recorder.since(cursor, user_id, BATCH)
        for row in [*late, *rows]:
            body = envelope(row.id, snapshot_of(row))
            sent.add(row.id)
            cursor = max(cursor, row.id)
            yield StreamedEvent(row.id, str(body["type"]), json.dumps(body, separators=(",", ":")))
        if late or rows:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= KEEPALIVE_S:
            quiet_since = time.monotonic()
            yield None
        if len(rows) < BATCH:
            await asyncio.sleep(poll_s)
