"""Request authentication: a Bearer key becomes a `TenantId`, and the transaction is bound to it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.errors import Unauthorized
from app.tenancy.keys import KEY_PREFIX, hash_key
from app.tenancy.types import TenantId

# Resolving the key binds the transaction to its tenant in the same statement (one round trip): the
# function is SECURITY DEFINER, so RLS does not hide the key row; every later statement sees the binding.
AUTHENTICATE = text(
    "SELECT tenant_id, key_id, set_config('app.tenant_id', tenant_id::text, true) AS bound "
    "FROM engram_authenticate(:key_hash)"
)
# The same, taking one of the tenant's concurrency slots too (`engram_claim_slot`, migration 0009).
AUTHENTICATE_AND_CLAIM = text(
    "SELECT tenant_id, key_id, set_config('app.tenant_id', tenant_id::text, true) AS bound, "
    "engram_claim_slot(tenant_id, :slots) AS slot FROM engram_authenticate(:key_hash)"
)


@dataclass(frozen=True, slots=True)
class Principal:
    tenant: TenantId
    key_id: uuid.UUID
    # The concurrency slot taken with the key (`slots` given): 0 no cap, n taken of n, -n all n held.
    slot: int | None = None


def bearer_token(authorization: str | None) -> str:
    """The key from an `Authorization: Bearer <key>` header."""
    if not authorization:
        raise Unauthorized("missing Authorization header (expected 'Bearer <api key>')")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("malformed Authorization header (expected 'Bearer <api key>')")
    return token


async def authenticate(
    session: AsyncSession, authorization: str | None, slots: int | None = None
) -> Principal:
    """Resolve the key and bind the session's transaction to its tenant (RLS context); with `slots`
    (the default concurrency cap), take one of the tenant's concurrency slots in the same statement."""
    token = bearer_token(authorization)
    if not token.startswith(KEY_PREFIX) or len(token) > 200:
        raise Unauthorized("invalid API key")
    if slots is None:
        row = (await session.execute(AUTHENTICATE, {"key_hash": hash_key(token)})).first()
    else:
        row = (
            await session.execute(AUTHENTICATE_AND_CLAIM, {"key_hash": hash_key(token), "slots": slots})
        ).first()
    if row is None:
        raise Unauthorized("invalid or revoked API key")
    return Principal(
        tenant=TenantId(row.tenant_id), key_id=row.key_id, slot=row.slot if slots is not None else None
    )
