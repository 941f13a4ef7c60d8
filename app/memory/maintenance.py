"""The lifecycle sweep: expire what is past its time, then archive what went cold, tenant by tenant.

Runs on the owner's connection (`engram maintenance`, or the service's periodic task when
`ENGRAM_MAINTENANCE_INTERVAL_S` > 0). Each tenant gets its own transaction with `app.tenant_id` set,
since FORCE row-level security applies to the owner too on non-superuser deployments. Every change
is an event with its reason; a second run finds nothing left to do.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.session import create_engine, set_tenant
from app.lib.clock import Clock
from app.lib.logging import get_logger
from app.lib.periodic import PeriodicTask
from app.lib.settings import Settings
from app.memory.lifecycle import SweepAction, SweepPolicy, sweep_decision
from app.store.events import EventRecorder, NewEvent
from app.store.maintenance import MaintenanceStore
from app.tenancy import admin
from app.tenancy.types import TenantId
from app.vocabulary import EventKind, MemoryStatus

log = get_logger("engram.maintenance")
ACTOR = "maintenance"
BATCH = 500
_STATUS = {SweepAction.EXPIRE: MemoryStatus.EXPIRED, SweepAction.ARCHIVE: MemoryStatus.ARCHIVED}
_EVENT = {SweepAction.EXPIRE: EventKind.EXPIRED, SweepAction.ARCHIVE: EventKind.ARCHIVED}


@dataclass(frozen=True, slots=True)
class SweepReport:
    tenant_id: TenantId
    tenant: str
    expired: int
    archived: int
    busy: bool = False  # another sweep held this tenant; nothing was done


def policy_of(settings: Settings) -> SweepPolicy:
    return SweepPolicy(settings.archive_after_days, settings.archive_importance_below)


async def sweep_tenant(
    session: AsyncSession, tenant: TenantId, name: str, settings: Settings, clock: Clock
) -> SweepReport:
    """One tenant, inside the caller's transaction."""
    await set_tenant(session, tenant)
    repo = MaintenanceStore(session, tenant)
    if not await repo.try_lock():
        return SweepReport(tenant, name, 0, 0, busy=True)
    events = EventRecorder(session, tenant, ACTOR)
    now, policy = clock.now(), policy_of(settings)
    counts = {SweepAction.EXPIRE: 0, SweepAction.ARCHIVE: 0}
    for action in (SweepAction.EXPIRE, SweepAction.ARCHIVE):  # expire first: an expired row is not "cold"
        after = None
        while batch := await repo.candidates(action, now, policy, after=after, limit=BATCH):
            after = batch[-1].id
            chosen: list[uuid.UUID] = []
            changes: list[NewEvent] = []
            for candidate in batch:
                decision = sweep_decision(candidate, now, policy)
                if decision is None or decision.action is not action:
                    continue
                chosen.append(candidate.id)
                changes.append(NewEvent.about(candidate, _EVENT[action], decision.reason, decision.details))
            counts[action] += await repo.set_status(chosen, _STATUS[action], now)
            await events.record(*changes)
    return SweepReport(tenant, name, counts[SweepAction.EXPIRE], counts[SweepAction.ARCHIVE])


async def sweep_tenants(
    engine: AsyncEngine, settings: Settings, clock: Clock, names: list[str] | None = None
) -> list[SweepReport]:
    """Every tenant (or the named ones), one transaction each, on an owner engine."""
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions() as session, session.begin():
        tenants = await admin.list_tenants(session, names)
    reports = []
    for tenant, name in tenants:
        async with sessions() as session, session.begin():
            reports.append(await sweep_tenant(session, tenant, name, settings, clock))
    changed = [r for r in reports if r.expired or r.archived]
    log.info(
        "maintenance_sweep",
        tenants=len(reports),
        expired=sum(r.expired for r in changed),
        archived=sum(r.archived for r in changed),
    )
    return reports


class ServiceMaintenance:
    """The in-service periodic sweep: its own small owner engine, disposed on stop."""

    def __init__(self, settings: Settings, clock: Clock) -> None:
        assert settings.database_url is not None
        self._engine = create_engine(settings.database_url, pool_size=1, max_overflow=0)
        self.task = PeriodicTask(
            lambda: sweep_tenants(self._engine, settings, clock),
            settings.maintenance_interval_s,
            name="maintenance",
        )

    def start(self) -> None:
        self.task.start()

    async def stop(self) -> None:
        await self.task.stop()
        await self._engine.dispose()


def service_maintenance(settings: Settings, clock: Clock) -> ServiceMaintenance | None:
    """The periodic sweep, if configured; it needs the owner URL (DATABASE_URL) to list tenants."""
    if settings.maintenance_interval_s <= 0:
        return None
    if not settings.database_url:
        log.warning("maintenance_disabled", reason="DATABASE_URL (the owner URL) is not set")
        return None
    return ServiceMaintenance(settings, clock)


def run_sweep(settings: Settings, clock: Clock, names: list[str] | None = None) -> list[SweepReport]:
    """`engram maintenance`: one sweep on a fresh owner engine, in its own event loop."""
    assert settings.database_url is not None
    url = settings.database_url

    async def main() -> list[SweepReport]:
        engine = create_engine(url, pool_size=1, max_overflow=0)
        try:
            return await sweep_tenants(engine, settings, clock, names)
        finally:
            await engine.dispose()

    return asyncio.run(main())
