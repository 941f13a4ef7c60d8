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
# (Under the tenant limits, the key is resolved with the request bucket instead: app/store/limits.py.)
AUTHENTICATE = text(
    "SELECT tenant_id, key_id, set_config('app.tenant_id', tenant_id::text, true) AS bound "
    "FROM engram_authenticate(:key_hash)"
)


UNKNOWN_KEY = "invalid or revoked API key"


@dataclass(frozen=True, slots=True)
class Principal:
    tenant: TenantId
    key_id: uuid.UUID


def bearer_token(authorization: str | None) -> str:
    """The key from an `Authorization: Bearer <key>` header."""
    if not authorization:
        raise Unauthorized("missing Authorization header (expected 'Bearer <api key>')")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("malformed Authorization header (expected 'Bearer <api key>')")
    return token


def key_hash_of(authorization: str | None) -> str:
    """The stored hash of the header's key; 401 for a header that cannot hold one (no statement runs)."""
    token = bearer_token(authorization)
    if not token.startswith(KEY_PREFIX) or len(token) > 200:
        raise Unauthorized("invalid API key")
    return hash_key(token)


async def authenticate(session: AsyncSession, authorization: str | None) -> Principal:
    """Resolve the key and bind the session's transaction to its tenant (RLS context)."""
    key_hash = key_hash_of(authorization)
    row = (await session.execute(AUTHENTICATE, {"key_hash": key_hash})).first()
    if row is None:
        raise Unauthorized(UNKNOWN_KEY)
    return Principal(tenant=TenantId(row.tenant_id), key_id=row.key_id)
