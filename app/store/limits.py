"""Per-tenant limits in PostgreSQL: the request bucket, concurrency slots, what a tenant stores and spends.

Everything here is shared by every process of the service: the bucket is a row (`tenant_limits`,
migration 0009) updated by `engram_admit` in one statement on an autocommit connection; a concurrency
slot is a transaction-level advisory lock of the request's own transaction (released by its commit or
rollback, or by PostgreSQL when the connection dies, so a killed process leaks no slot).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.lib.errors import MemoryQuotaExceeded, TokenQuotaExceeded
from app.tenancy.types import TenantId

LIMIT_FIELDS = ("requests_per_minute", "concurrent_requests", "max_memories", "tokens_per_day")
TOKEN_WINDOW = timedelta(days=1)

# The key resolved (SECURITY DEFINER: RLS does not hide the key row) and a request taken from its
# tenant's bucket, in one statement: no row for an unknown or revoked key, and then no bucket is touched.
_AUTHENTICATE_AND_ADMIT = text(
    "SELECT a.tenant_id, a.key_id, d.retry_after_s, d.requests_per_minute, d.concurrent_requests,"
    " d.max_memories, d.tokens_per_day, d.bucket_tokens FROM engram_authenticate(:key_hash) a"
    " CROSS JOIN LATERAL engram_admit(a.tenant_id, :rpm, :concurrent, :memories, :tokens) d"
)
# A new transaction bound to the tenant and one of its slots taken, in one statement (migration 0009):
# 0 no cap, n one of n taken, -n all n held.
_BIND_AND_CLAIM = text("SELECT engram_claim_slot(CAST(:tenant AS uuid), :default) AS slot")
_STORED = text("SELECT count(*) FROM memories WHERE tenant_id = :tenant")
_TOKENS = text(
    "SELECT COALESCE(sum(total_tokens), 0) AS spent, min(created_at) AS oldest FROM usage_events"
    " WHERE tenant_id = :tenant AND created_at > now() - CAST(:window AS interval)"
)
_OVERRIDES = text(
    "SELECT requests_per_minute, concurrent_requests, max_memories, tokens_per_day FROM tenant_limits"
    " WHERE tenant_id = :tenant"
)
_SET = text(
    "INSERT INTO tenant_limits (tenant_id, requests_per_minute, concurrent_requests, max_memories,"
    " tokens_per_day) VALUES (:tenant, :requests_per_minute, :concurrent_requests, :max_memories,"
    " :tokens_per_day) ON CONFLICT (tenant_id) DO UPDATE SET"
    " requests_per_minute = EXCLUDED.requests_per_minute,"
    " concurrent_requests = EXCLUDED.concurrent_requests,"
    " max_memories = EXCLUDED.max_memories, tokens_per_day = EXCLUDED.tokens_per_day"
)


@dataclass(frozen=True, slots=True)
class Limits:
    """A tenant's effective limits (0: unlimited)."""

    requests_per_minute: int
    concurrent_requests: int
    max_memories: int
    tokens_per_day: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Admission:
    """What `engram_admit` answered: the limits, the bucket's level, and how long to wait if refused."""

    limits: Limits
    retry_after_s: float
    bucket_tokens: float | None  # None: no rate limit

    @property
    def admitted(self) -> bool:
        return self.retry_after_s <= 0


async def authenticate_and_admit(
    conn: AsyncConnection, key_hash: str, defaults: Limits
) -> tuple[TenantId, uuid.UUID, Admission] | None:
    """One request taken from the bucket of the tenant of the key whose hash is `key_hash` (autocommit
    `conn`: the bucket's row is locked for one statement), with the key's tenant and id; None for an
    unknown or revoked key."""
    row = (await conn.execute(_AUTHENTICATE_AND_ADMIT, {"key_hash": key_hash, **_defaults(defaults)})).first()
    if row is None:
        return None
    return TenantId(row.tenant_id), row.key_id, _admission(row)


def _defaults(defaults: Limits) -> dict[str, int]:
    return {
        "rpm": defaults.requests_per_minute,
        "concurrent": defaults.concurrent_requests,
        "memories": defaults.max_memories,
        "tokens": defaults.tokens_per_day,
    }


def _admission(row: Row[Any]) -> Admission:
    limits = Limits(
        int(row.requests_per_minute),
        int(row.concurrent_requests),
        int(row.max_memories),
        int(row.tokens_per_day),
    )
    return Admission(limits, float(row.retry_after_s), row.bucket_tokens)


async def bind_and_claim(session: AsyncSession, tenant: TenantId, default_slots: int) -> int:
    """Bind this transaction to `tenant` and take one of its concurrency slots (its own limit, else
    `default_slots`): 0 no cap, n one of n taken, -n all n held (none taken)."""
    return int(
        (
            await session.execute(_BIND_AND_CLAIM, {"tenant": str(tenant), "default": default_slots})
        ).scalar_one()
    )


async def memories_stored(session: AsyncSession, tenant: TenantId) -> int:
    return int((await session.execute(_STORED, {"tenant": tenant})).scalar_one())


@dataclass(frozen=True, slots=True)
class TokenSpend:
    spent: int  # model tokens over the last 24 hours
    oldest: datetime | None  # the oldest event still in the window

    def frees_at(self) -> datetime:
        """When the oldest call in the window leaves it (now, when there is none)."""
        return (self.oldest + TOKEN_WINDOW) if self.oldest is not None else datetime.now(UTC)


async def tokens_spent(session: AsyncSession, tenant: TenantId) -> TokenSpend:
    row = (await session.execute(_TOKENS, {"tenant": tenant, "window": TOKEN_WINDOW})).one()
    return TokenSpend(int(row.spent), row.oldest)


async def overrides(session: AsyncSession, tenant: TenantId) -> dict[str, int | None]:
    """The tenant's own values (None: the default); the caller has bound the session to the tenant."""
    row = (await session.execute(_OVERRIDES, {"tenant": tenant})).first()
    return {f: (getattr(row, f) if row is not None else None) for f in LIMIT_FIELDS}


async def set_overrides(session: AsyncSession, tenant: TenantId, values: dict[str, Any]) -> None:
    await session.execute(_SET, {"tenant": tenant, **{f: values.get(f) for f in LIMIT_FIELDS}})


class StoredCounts:
    """Memories stored per tenant, counted exactly only near the limit.

    A count is a scan of the tenant's index; below 90% of the limit this process trusts its own
    count of a moment ago plus what it has admitted since, so a write far from the limit costs no
    statement. Another process's writes are seen at the next exact count (at most `max_age_s` later).
    """

    def __init__(self, max_age_s: float = 2.0, margin: float = 0.9) -> None:
        self.max_age_s = max_age_s
        self.margin = margin
        self._known: dict[TenantId, tuple[int, float]] = {}

    async def room_for(
        self, session: AsyncSession, tenant: TenantId, limit: int, adding: int, now: float
    ) -> tuple[bool, int]:
        """Whether `adding` more memories fit under `limit`, and the count it was decided on."""
        known = self._known.get(tenant)
        if known is not None and now - known[1] < self.max_age_s and known[0] + adding <= limit * self.margin:
            count = known[0]
        else:
            count = await memories_stored(session, tenant)
        fits = count + adding <= limit
        self._known[tenant] = (count + adding if fits else count, now)
        if len(self._known) > 10_000:  # tenants seen long ago
            self._known = {t: v for t, v in self._known.items() if now - v[1] < self.max_age_s}
        return fits, count


async def ensure_room(
    session: AsyncSession, tenant: TenantId, limits: Limits, stored: StoredCounts, adding: int
) -> None:
    """Refuse a write that would take the tenant past its memories quota (before anything is written)."""
    if limits.max_memories <= 0 or adding <= 0:
        return
    fits, count = await stored.room_for(session, tenant, limits.max_memories, adding, time.monotonic())
    if not fits:
        raise MemoryQuotaExceeded(
            f"the tenant stores {count} of its {limits.max_memories} memories; "
            f"{adding} more do not fit (nothing was written)"
        )


async def ensure_tokens(session: AsyncSession, tenant: TenantId, limits: Limits) -> None:
    """Refuse a model call once the tenant's tokens over the last 24 hours reached its quota."""
    if limits.tokens_per_day <= 0:
        return
    spend = await tokens_spent(session, tenant)
    if spend.spent >= limits.tokens_per_day:
        wait = max(1.0, (spend.frees_at() - datetime.now(UTC)).total_seconds())
        raise TokenQuotaExceeded(
            f"the tenant used {spend.spent} model tokens in the last 24 hours; its quota is "
            f"{limits.tokens_per_day}",
            wait,
        )
