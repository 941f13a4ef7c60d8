"""The `engram` command: serve, migrate, tenant and key administration."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from app.bootstrap import ensure_dev_tenant, prepare_database, run_as_owner
from app.lib.errors import EngramError
from app.lib.settings import Settings
from app.portability import cli as portability_cli
from app.tenancy import admin


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app import serve
    from app.lib.logging import configure_logging
    from app.main import create_app

    configure_logging(settings.log_level, settings.log_json)
    serve.quiet_progress_bars()
    workers = serve.resolve_workers(args.workers if args.workers is not None else settings.workers)
    sock = serve.bind(args.host, args.port)  # first: a busy port fails before anything starts
    prepared = prepare_database(settings)
    settings = prepared.settings
    if prepared.embedded is not None:
        key, key_file = ensure_dev_tenant(settings)
        if key is not None:
            print(f"Development tenant 'dev' created. API key (shown once, also in {key_file}):\n  {key}")
        else:
            print(f"Embedded database in {settings.data_dir}; the dev tenant's key is in {key_file}")
    hooks = [prepared.embedded.stop] if prepared.embedded is not None else []
    assert settings.database_url is not None
    print(
        f"Engram listening on http://{args.host}:{args.port} with {workers} worker(s) "
        "(docs at /schema, OpenAPI at /schema/openapi.json)",
        flush=True,
    )
    serve.run(
        sock,
        workers,
        # One process: the app is built here and stops the embedded database on its shutdown.
        lambda: create_app(settings, on_shutdown=hooks, serving=True),
        {"DATABASE_URL": settings.database_url},
        on_exit=hooks if workers > 1 else (),
    )
    return 0


def _migrate(_: argparse.Namespace, settings: Settings) -> int:
    prepared = prepare_database(settings)
    print(f"Migrations applied ({'embedded' if prepared.embedded else 'DATABASE_URL'}).")
    return 0


def _tenant(args: argparse.Namespace, settings: Settings) -> int:
    settings = prepare_database(settings).settings

    async def work(session: AsyncSession) -> admin.CreatedKey:
        return await admin.create_tenant(session, args.name)

    created = run_as_owner(settings, work)
    print(f"Tenant {args.name!r} created ({created.tenant_id}). API key (shown once):\n  {created.plaintext}")
    return 0


def _key(args: argparse.Namespace, settings: Settings) -> int:
    settings = prepare_database(settings).settings
    if args.key_command == "create":

        async def create(session: AsyncSession) -> admin.CreatedKey:
            return await admin.create_key(session, args.tenant, args.name)

        created = run_as_owner(settings, create)
        print(f"Key created for {args.tenant!r} (shown once):\n  {created.plaintext}")
    elif args.key_command == "list":

        async def listing(session: AsyncSession) -> list[admin.KeyInfo]:
            return await admin.list_keys(session, args.tenant)

        for k in run_as_owner(settings, listing):
            state = f"revoked {k.revoked_at:%Y-%m-%d}" if k.revoked_at else "live"
            used = f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never"
            print(f"{k.tenant:20} {k.prefix:14} {k.name:16} {state:18} last used {used}  id {k.id}")
    else:

        async def revoke(session: AsyncSession) -> int:
            return await admin.revoke_key(session, args.key)

        run_as_owner(settings, revoke)
        print(f"Revoked {args.key}.")
    return 0


def _maintenance(args: argparse.Namespace, settings: Settings) -> int:
    from app.lib.clock import SystemClock
    from app.memory.maintenance import run_sweep

    settings = prepare_database(settings).settings
    for r in run_sweep(settings, SystemClock(), args.tenant or None):
        state = "busy (another sweep holds it)" if r.busy else f"expired {r.expired}, archived {r.archived}"
        print(f"{r.tenant:20} {state}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="engram", description="Long-term memory service for LLM agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", help="run the HTTP service (embedded PostgreSQL when DATABASE_URL is unset)"
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--workers", type=int, help="worker processes (default ENGRAM_WORKERS; 0: one per CPU)"
    )
    serve.set_defaults(handler=_serve)
    sub.add_parser("migrate", help="apply database migrations").set_defaults(handler=_migrate)
    tenant = sub.add_parser("tenant", help="tenant administration")
    tenant_sub = tenant.add_subparsers(dest="tenant_command", required=True)
    create = tenant_sub.add_parser("create", help="create a tenant and print its first key")
    create.add_argument("name")
    create.set_defaults(handler=_tenant)
    key = sub.add_parser("key", help="API key administration")
    key_sub = key.add_subparsers(dest="key_command", required=True)
    kc = key_sub.add_parser("create", help="create another key for a tenant")
    kc.add_argument("tenant")
    kc.add_argument("--name", default="cli")
    kl = key_sub.add_parser("list", help="list keys (never their secrets)")
    kl.add_argument("tenant", nargs="?")
    kr = key_sub.add_parser("revoke", help="revoke a key by prefix or id")
    kr.add_argument("key")
    for p in (kc, kl, kr):
        p.set_defaults(handler=_key)
    maintenance = sub.add_parser(
        "maintenance", help="sweep: expire what is past its time, archive what is cold"
    )
    maintenance.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    maintenance.set_defaults(handler=_maintenance)
    portability_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args, Settings())
    except EngramError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
