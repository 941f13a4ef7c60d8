"""Tenant and key administration. Runs on the owner's connection (CLI), never on a request path."""

from __future__ import annotations

import uuid
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ApiKey, Tenant
from app.lib.errors import Conflict, NotFound
from app.tenancy.keys import generate_key
from app.tenancy.types import TenantId


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


async def create_tenant(session: AsyncSession, name: str) -> CreatedKey:
    """A new tenant with its first key (the plaintext is returned once and never stored)."""
    tenant_id = TenantId(uuid.uuid4())
    session.add(Tenant(id=tenant_id, name=name))
    try:
        await session.flush()
    except IntegrityError as exc:
        raise Conflict(f"a tenant named {name!r} already exists") from exc
    return await create_key(session, name, "default")


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
