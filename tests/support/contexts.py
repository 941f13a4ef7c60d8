"""A memory service over a test's own session, as a request builds it (app/context.py)."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from app.context import RequestContext
from app.embeddings.base import Embedder
from app.lib.clock import Clock, SystemClock
from app.lib.settings import Settings
from app.memory.service import MemoryService
from app.store.plan import ScopeSizes
from app.store.terms import TermIndex
from app.tenancy.types import TenantId


def memory_service(
    session: AsyncSession,
    tenant: TenantId,
    embedder: Embedder,
    *,
    settings: Settings | None = None,
    clock: Clock | None = None,
    terms: TermIndex | None = None,
    counted_now: bool = False,
) -> MemoryService:
    """The service for `tenant` on `session` (the caller has set its tenant); `terms`: the index of
    scopes' terms (None: the process's); `counted_now`: scope sizes and statistics of its own, so none
    is remembered from another test."""
    ctx = RequestContext.build(
        session,
        tenant,
        "test",
        embedder=embedder,
        settings=settings or Settings(),
        clock=clock or SystemClock(),
        terms=terms,
    )
    return MemoryService(replace(ctx, scope_sizes=ScopeSizes()) if counted_now else ctx)
