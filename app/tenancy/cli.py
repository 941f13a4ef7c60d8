"""`engram tenant list|create|rename|delete` and `engram key list|create|revoke` (owner connection)."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from app.bootstrap import prepare_database, run_as_owner
from app.lib.console import CommandFailed, Output
from app.lib.settings import Settings
from app.tenancy import admin
from app.tenancy.types import TenantId

T = TypeVar("T")


def _owner(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    return run_as_owner(prepare_database(settings).settings, work)


def _tenant_list(args: argparse.Namespace, settings: Settings) -> Output:
    tenants = _owner(settings, admin.tenant_overview)
    lines = [
        f"{t.name:24} {t.id}  created {t.created_at:%Y-%m-%d}  "
        f"keys {t.live_keys} live, {t.revoked_keys} revoked"
        for t in tenants
    ]
    return Output(tenants, "\n".join(lines) or "No tenants.")


def _tenant_create(args: argparse.Namespace, settings: Settings) -> Output:
    async def work(session: AsyncSession) -> admin.CreatedKey:
        return await admin.create_tenant(session, args.name)

    created = _owner(settings, work)
    data = {"tenant": args.name, "tenant_id": created.tenant_id, "key_id": created.key_id}
    text = f"Tenant {args.name!r} created ({created.tenant_id}). API key (shown once):\n  {created.plaintext}"
    return Output({**data, "api_key": created.plaintext}, text)


def _tenant_rename(args: argparse.Namespace, settings: Settings) -> Output:
    async def work(session: AsyncSession) -> TenantId:
        return await admin.rename_tenant(session, args.name, args.new_name)

    tenant_id = _owner(settings, work)
    data = {"tenant_id": tenant_id, "old_name": args.name, "name": args.new_name.strip()}
    return Output(data, f"Tenant {args.name!r} is now {data['name']!r} ({tenant_id}); its keys still work.")


def _tenant_delete(args: argparse.Namespace, settings: Settings) -> Output:
    if not args.yes:
        raise CommandFailed(
            "usage", f"deleting tenant {args.name!r} removes all its memories and keys; add --yes to confirm"
        )

    async def work(session: AsyncSession) -> admin.DeletedTenant:
        return await admin.delete_tenant(session, args.name)

    d = _owner(settings, work)
    text = (
        f"Deleted tenant {d.name!r} ({d.id}): {d.memories} memories, {d.events} events, {d.messages} "
        f"messages, {d.proposals} proposals, {d.usage_events} usage events, {d.keys} keys."
    )
    return Output(d, text)


def _key_create(args: argparse.Namespace, settings: Settings) -> Output:
    async def work(session: AsyncSession) -> admin.CreatedKey:
        return await admin.create_key(session, args.tenant, args.name)

    created = _owner(settings, work)
    data = {"tenant": args.tenant, "tenant_id": created.tenant_id, "key_id": created.key_id}
    text = f"Key created for {args.tenant!r} (shown once):\n  {created.plaintext}"
    return Output({**data, "api_key": created.plaintext}, text)


def _key_list(args: argparse.Namespace, settings: Settings) -> Output:
    async def work(session: AsyncSession) -> list[admin.KeyInfo]:
        return await admin.list_keys(session, args.tenant)

    keys = _owner(settings, work)
    lines = []
    for k in keys:
        state = f"revoked {k.revoked_at:%Y-%m-%d}" if k.revoked_at else "live"
        used = f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never"
        lines.append(f"{k.tenant:20} {k.prefix:14} {k.name:16} {state:18} last used {used}  id {k.id}")
    return Output(keys, "\n".join(lines) or "No keys.")


def _key_revoke(args: argparse.Namespace, settings: Settings) -> Output:
    async def work(session: AsyncSession) -> int:
        return await admin.revoke_key(session, args.key)

    count = _owner(settings, work)
    return Output({"revoked": count, "key": args.key}, f"Revoked {args.key}.")


# --- `engram tenant limits` (issue 23) ---

_LIMIT_OPTIONS = {
    "requests_per_minute": "requests per minute (a token bucket; burst = this many)",
    "concurrent_requests": "requests in flight at once, over every process",
    "max_memories": "memories stored (every status)",
    "tokens_per_day": "model tokens over the last 24 hours",
}
_DEFAULT = "default"


def _limit_value(raw: str) -> int | str:
    if raw == _DEFAULT:
        return raw
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= 0 or {_DEFAULT!r}, got {raw!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 or {_DEFAULT!r}, got {raw!r}")
    return value


def _tenant_limits(args: argparse.Namespace, settings: Settings) -> Output:
    from app.api.limits import default_limits
    from app.store import limits as store

    changes = {f: getattr(args, f) for f in _LIMIT_OPTIONS if getattr(args, f) is not None}

    async def work(session: AsyncSession) -> tuple[TenantId, dict[str, int | None]]:
        tenant = await admin.bind_tenant(session, args.name)
        own = await store.overrides(session, tenant)
        if changes:
            own.update({f: (None if v == _DEFAULT else v) for f, v in changes.items()})
            await store.set_overrides(session, tenant, own)
        return tenant, own

    tenant, own = _owner(settings, work)
    defaults = default_limits(settings).as_dict()
    effective = {f: (own[f] if own[f] is not None else defaults[f]) for f in _LIMIT_OPTIONS}
    data = {
        "tenant": args.name,
        "tenant_id": tenant,
        "limits": effective,
        "overrides": own,
        "defaults": defaults,
    }
    lines = [f"Limits of {args.name!r} ({tenant}); 0 means unlimited:"]
    for f in _LIMIT_OPTIONS:
        origin = "default" if own[f] is None else "set for this tenant"
        lines.append(f"  {f:20} {effective[f]:>12}  ({origin})")
    return Output(data, "\n".join(lines))


def _register_limits(tenant: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    limits = tenant.add_parser(
        "limits",
        parents=parents,
        help="show or set a tenant's limits (requests, concurrency, storage, tokens)",
    )
    limits.add_argument("name")
    for field, text in _LIMIT_OPTIONS.items():
        limits.add_argument(
            "--" + field.replace("_", "-"),
            dest=field,
            type=_limit_value,
            metavar="N",
            help=f"{text}; 0: unlimited, {_DEFAULT!r}: the service's default",
        )
    limits.set_defaults(handler=_tenant_limits)


def register(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add `tenant` and `key` to the `engram` parser."""
    tenant = sub.add_parser("tenant", help="tenant administration").add_subparsers(
        dest="tenant_command", required=True
    )
    tenant.add_parser("list", parents=parents, help="every tenant and its key counts").set_defaults(
        handler=_tenant_list
    )
    create = tenant.add_parser("create", parents=parents, help="create a tenant and print its first key")
    create.add_argument("name")
    create.set_defaults(handler=_tenant_create)
    rename = tenant.add_parser("rename", parents=parents, help="rename a tenant (keys and data unchanged)")
    rename.add_argument("name")
    rename.add_argument("new_name")
    rename.set_defaults(handler=_tenant_rename)
    remove = tenant.add_parser("delete", parents=parents, help="delete a tenant and all its data")
    remove.add_argument("name")
    remove.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    remove.set_defaults(handler=_tenant_delete)
    _register_limits(tenant, parents)

    key = sub.add_parser("key", help="API key administration").add_subparsers(
        dest="key_command", required=True
    )
    kc = key.add_parser("create", parents=parents, help="create another key for a tenant")
    kc.add_argument("tenant")
    kc.add_argument("--name", default="cli")
    kc.set_defaults(handler=_key_create)
    kl = key.add_parser("list", parents=parents, help="list keys (never their secrets)")
    kl.add_argument("tenant", nargs="?")
    kl.set_defaults(handler=_key_list)
    kr = key.add_parser("revoke", parents=parents, help="revoke a key by prefix or id")
    kr.add_argument("key")
    kr.set_defaults(handler=_key_revoke)
