"""The `engram` command: serve, migrate, maintenance, and the domains' commands (tenants and keys,
portability, remember / recall against a running service).

Every command returns an `Output` (text, or JSON with `--json`); failures go to stderr with an exit
code per kind of failure (`app.lib.console.ExitCode`, documented in docs/CLI.md).
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Sequence

import pydantic
from sqlalchemy.exc import InterfaceError, OperationalError

from app.bootstrap import ensure_dev_tenant, prepare_database
from app.lib.console import CommandFailed, ExitCode, Output, Parser, emit, json_flag, report
from app.lib.errors import EngramError
from app.lib.settings import Settings
from app.mcp import cli as mcp_cli  # `engram mcp`
from app.portability import cli as portability_cli
from app.remote import register as register_client_commands
from app.tenancy import cli as tenancy_cli


def _serve(args: argparse.Namespace, settings: Settings) -> Output:
    from app import serve
    from app.lib.logging import configure_logging
    from app.main import create_app

    configure_logging(settings.log_level, settings.log_json)
    serve.quiet_progress_bars()
    workers = serve.resolve_workers(args.workers if args.workers is not None else settings.workers)
    sock = serve.bind(args.host, args.port)  # first: a busy port fails before anything starts
    prepared = prepare_database(settings)
    settings = prepared.settings
    started: dict[str, str | None] = {"url": f"http://{args.host}:{args.port}", "dev_api_key": None}
    lines = []
    if prepared.embedded is not None:
        key, key_file = ensure_dev_tenant(settings)
        started["dev_api_key_file"] = str(key_file)
        if key is not None:
            started["dev_api_key"] = key
            lines.append(f"Development tenant 'dev' created. API key (shown once, also in {key_file}):")
            lines.append(f"  {key}")
        else:
            lines.append(f"Embedded database in {settings.data_dir}; the dev tenant's key is in {key_file}")
    hooks = [prepared.embedded.stop] if prepared.embedded is not None else []
    assert settings.database_url is not None
    lines.append(
        f"Engram listening on {started['url']} with {workers} worker(s) "
        "(docs at /schema, OpenAPI at /schema/openapi.json)"
    )
    emit(Output(started, "\n".join(lines)), args.json)  # before serving: it runs until stopped
    serve.run(
        sock,
        workers,
        # One process: the app is built here and stops the embedded database on its shutdown.
        lambda: create_app(settings, on_shutdown=hooks, serving=True),
        {"DATABASE_URL": settings.database_url},
        on_exit=hooks if workers > 1 else (),
        header_timeout_s=settings.header_timeout_s,
    )
    return Output({"stopped": True}, "")


def _migrate(args: argparse.Namespace, settings: Settings) -> Output:
    prepared = prepare_database(settings)
    where = "embedded" if prepared.embedded else "DATABASE_URL"
    return Output({"migrated": True, "database": where}, f"Migrations applied ({where}).")


def _maintenance(args: argparse.Namespace, settings: Settings) -> Output:
    from app.lib.clock import SystemClock
    from app.memory.maintenance import run_sweep

    settings = prepare_database(settings).settings
    results = run_sweep(settings, SystemClock(), args.tenant or None)
    lines = [
        f"{r.tenant:20} "
        + ("busy (another sweep holds it)" if r.busy else f"expired {r.expired}, archived {r.archived}")
        for r in results
    ]
    return Output(results, "\n".join(lines))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="engram", description="Long-term memory service for LLM agents.")
    common = [json_flag()]
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", parents=common, help="run the HTTP service (embedded PostgreSQL when DATABASE_URL is unset)"
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--workers", type=int, help="worker processes (default ENGRAM_WORKERS; 0: one per CPU)"
    )
    serve.set_defaults(handler=_serve)
    sub.add_parser("migrate", parents=common, help="apply database migrations").set_defaults(handler=_migrate)
    tenancy_cli.register(sub, common)
    maintenance = sub.add_parser(
        "maintenance", parents=common, help="sweep: expire what is past its time, archive what is cold"
    )
    maintenance.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    maintenance.set_defaults(handler=_maintenance)
    portability_cli.register(sub, common)
    register_client_commands(sub, common)
    mcp_cli.register(sub, common)  # `engram mcp`: the MCP server over stdio
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    as_json = "--json" in (sys.argv[1:] if argv is None else argv)  # before parsing: usage errors too
    try:
        args = build_parser().parse_args(argv)
        emit(args.handler(args, Settings()), args.json)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except (EngramError, CommandFailed) as exc:
        return report(exc.code, exc.detail, as_json)
    except pydantic.ValidationError as exc:  # a setting in the environment that does not parse
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return report("usage", f"invalid configuration: {problems}", as_json)
    except (ConnectionError, socket.gaierror, TimeoutError, OperationalError, InterfaceError) as exc:
        first_line = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return report("unavailable", f"cannot reach the database ({first_line})", as_json)
    except OSError as exc:  # a file that cannot be read or written
        return report("not_found" if isinstance(exc, FileNotFoundError) else "error", str(exc), as_json)
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
