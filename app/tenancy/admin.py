"""Tenant and key administration. Runs on the owner's connection (CLI), never on a request path."""

from __future__ import annotations

import uuid
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from app.db.models import ApiKey, DreamProposal, Memory, MemoryEvent, Message, Tenant, UsageEvent
from app.db.session import set_tenant
from app.lib.errors import Conflict, NotFound, ValidationFailed
from app.tenancy.keys import generate_key
from app.tenancy.types import TenantId

MAX_NAME = 200  # the column's length


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: uuid.UUID
    tenant: str
    prefix: str
    name: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class CreatedKey:
    tenant_id: TenantId
    key_id: uuid.UUID
    plaintext: str


@dataclass(frozen=True, slots=True)
class TenantInfo:
    id: uuid.UUID
    name: str
    created_at: datetime
    live_keys: int
    revoked_keys: int


@dataclass(frozen=True, slots=True)
class DeletedTenant:
    """What deleting a tenant removed (row counts)."""

    id: uuid.UUID
    name: str
    memories: int
    events: int
    messages: int
    proposals: int
    usage_events: int
    keys: int


def _check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME or "\x00" in name:
        raise ValidationFailed(f"a tenant name has 1 to {MAX_NAME} characters (no NUL)")
    return name


async def create_tenant(session: AsyncSession, name: str) -> CreatedKey:
    """A new tenant with its first key (the plaintext is returned once and never stored)."""
    name = _check_name(name)
    tenant_id = TenantId(uuid.uuid4())
    session.add(Tenant(id=tenant_id, name=name))
    try:
        await session.flush()
    except IntegrityError as exc:
        raise Conflict(f"a tenant named {name!r} already exists") from exc
    return await create_key(session, name, "default")


async def tenant_overview(session: AsyncSession) -> list[TenantInfo]:
    """Every tenant with its key counts (the owner's view; memories stay behind each tenant's RLS)."""
    live = func.count(ApiKey.id).filter(ApiKey.revoked_at.is_(None))
    revoked = func.count(ApiKey.id).filter(ApiKey.revoked_at.is_not(None))
    query = (
        select(Tenant.id, Tenant.name, Tenant.created_at, live, revoked)
        .outerjoin(ApiKey, ApiKey.tenant_id == Tenant.id)
        .group_by(Tenant.id)
        .order_by(Tenant.name)
    )
    return [TenantInfo(*row) for row in (await session.execute(query)).all()]


async def rename_tenant(session: AsyncSession, name: str, new_name: str) -> TenantId:
    """Rename a tenant; its id, keys and data are unchanged."""
    new_name = _check_name(new_name)
    tenant = await _tenant_by_name(session, name)
    tenant.name = new_name
    try:
        await session.flush()
    except IntegrityError as exc:
        raise Conflict(f"a tenant named {new_name!r} already exists") from exc
    return TenantId(tenant.id)


# Counted for the receipt; the tenant's row cascades to these and to every other tenant table.
_TENANT_DATA: dict[str, InstrumentedAttribute[uuid.UUID]] = {
    "memories": Memory.tenant_id,
    "events": MemoryEvent.tenant_id,
    "messages": Message.tenant_id,
    "proposals": DreamProposal.tenant_id,
    "usage_events": UsageEvent.tenant_id,
    "keys": ApiKey.tenant_id,
}


async def delete_tenant(session: AsyncSession, name: str) -> DeletedTenant:
    """Delete a tenant and everything it owns, in the caller's transaction; returns the counts."""
    tenant = await session.scalar(select(Tenant).where(Tenant.name == name).with_for_update())
    if tenant is None:
        raise NotFound(f"no tenant named {name!r}")
    # The row lock holds off the tenant's writers (their foreign-key checks share-lock this row), so
    # the counts are what the cascade deletes. FORCE RLS binds an owner that is not a superuser: set
    # the tenant so it sees its rows.
    await set_tenant(session, TenantId(tenant.id))
    counts: dict[str, int] = {}
    for label, column in _TENANT_DATA.items():
        counts[label] = await session.scalar(select(func.count()).where(column == tenant.id)) or 0
    await session.execute(delete(Tenant).where(Tenant.id == tenant.id))
    return DeletedTenant(id=tenant.id, name=tenant.name, **counts)


async def bind_tenant(session: AsyncSession, name: str) -> TenantId:
    """The named tenant's id, with the owner's transaction bound to it (FORCE RLS: to see its rows)."""
    tenant = TenantId((await _tenant_by_name(session, name)).id)
    await set_tenant(session, tenant)
    return tenant


async def _tenant_by_name(session: AsyncSession, name: str) -> Tenant:
    tenant = await session.scalar(select(Tenant).where(Tenant.name == name))
    if tenant is None:
        raise NotFound(f"no tenant named {name!r}")
    return tenant


async def create_key(session: AsyncSession, tenant_name: str, key_name: str) -> CreatedKey:
    """Another key for an existing tenant."""
    tenant = await _tenant_by_name(session, tenant_name)
    new = generate_key()
    key = ApiKey(
        tenant_id=tenant.id, id=uuid.uuid4(), prefix=new.prefix, key_hash=new.key_hash, name=key_name
    )
    session.add(key)
    await session.flush()
    return CreatedKey(tenant_id=TenantId(tenant.id), key_id=key.id, plaintext=new.plaintext)


async def list_keys(session: AsyncSession, tenant_name: str | None = None) -> list[KeyInfo]:
    """Keys (never their secrets), optionally of one tenant."""
    query = select(ApiKey, Tenant.name).join(Tenant, Tenant.id == ApiKey.tenant_id)
    if tenant_name is not None:
        query = query.where(Tenant.name == tenant_name)
    rows = (await session.execute(query.order_by(Tenant.name, ApiKey.created_at))).all()
    return [
        KeyInfo(k.id, name, k.prefix, k.name, k.created_at, k.last_used_at, k.revoked_at) for k, name in rows
    ]


async def revoke_key(session: AsyncSession, prefix_or_id: str) -> int:
    """Revoke a key by its public prefix or id; returns how many keys were revoked."""
    condition = ApiKey.prefix == prefix_or_id
    with suppress(ValueError):
        condition = condition | (ApiKey.id == uuid.UUID(prefix_or_id))
    result = await session.execute(
        update(ApiKey)
        .where(condition, ApiKey.revoked_at.is_(None))
        .values(revoked_at=datetime.now().astimezone())
    )
    count = int(getattr(result, "rowcount", 0) or 0)
    if count == 0:
        raise NotFound(f"no live key {prefix_or_id!r}")
    return count


async def any_tenant(session: AsyncSession) -> bool:
    return (await session.scalar(select(Tenant.id).limit(1))) is not None


async def list_tenants(session: AsyncSession, names: list[str] | None = None) -> list[tuple[TenantId, str]]:
    """Every tenant (or the named ones) for owner-side maintenance; an unknown name is an error."""
    query = select(Tenant.id, Tenant.name).order_by(Tenant.name)
    if names:
        query = query.where(Tenant.name.in_(names))
    rows = [(TenantId(tid), name) for tid, name in (await session.execute(query)).all()]
    missing = sorted(set(names or []) - {name for _, name in rows})
    if missing:
        raise NotFound(f"no tenant named {', '.join(repr(n) for n in missing)}")
    return rows
