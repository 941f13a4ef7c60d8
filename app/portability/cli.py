"""`engram export`, `engram import` and `engram reembed`: owner-side, bound to one tenant's RLS context.

They connect as the owner (like the other administration commands) and set `app.tenant_id` in every
transaction, so they see and write exactly one tenant's rows. Import is one transaction; re-embed
commits batch by batch, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from tqdm import tqdm

from app.bootstrap import DEV_TENANT, prepare_database
from app.context import RequestContext
from app.db.session import create_engine, set_tenant
from app.embeddings.base import Embedder
from app.embeddings.factory import build_embedder
from app.lib.clock import SystemClock
from app.lib.console import Output
from app.lib.settings import Settings
from app.portability.document import encode_document, parse_document
from app.portability.markdown import render_markdown
from app.portability.reembed import Reembedder
from app.portability.service import PortabilityService
from app.tenancy import admin
from app.tenancy.types import TenantId

T = TypeVar("T")
ACTOR = "cli"


@dataclass(frozen=True, slots=True)
class _Context:
    sessions: async_sessionmaker[AsyncSession]
    tenant: TenantId
    embedder: Embedder
    settings: Settings

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[RequestContext]:
        """One owner transaction bound to the tenant (RLS applies as it does to the service)."""
        async with self.sessions() as session, session.begin():
            await set_tenant(session, self.tenant)
            yield RequestContext.build(
                session,
                self.tenant,
                ACTOR,
                embedder=self.embedder,
                settings=self.settings,
                clock=SystemClock(),
            )


@asynccontextmanager
async def _tenant_context(settings: Settings, name: str) -> AsyncIterator[_Context]:
    assert settings.database_url is not None
    engine = create_engine(settings.database_url, pool_size=1, max_overflow=0)
    embedder = await build_embedder(settings)
    try:
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        async with sessions() as session, session.begin():
            [(tenant, _)] = await admin.list_tenants(session, [name])
        yield _Context(sessions, tenant, embedder, settings)
    finally:
        await embedder.aclose()
        await engine.dispose()


def _run(args: argparse.Namespace, settings: Settings, work: Callable[[_Context], Awaitable[T]]) -> T:
    settings = prepare_database(settings).settings

    async def main() -> T:
        async with _tenant_context(settings, args.tenant) as ctx:
            return await work(ctx)

    return asyncio.run(main())


def _export(args: argparse.Namespace, settings: Settings) -> Output:
    async def work(ctx: _Context) -> bytes:
        async with ctx.transaction() as deps:
            doc = await PortabilityService(deps).export(args.user, args.project)
        if args.format == "markdown":
            return render_markdown(doc).encode()
        return encode_document(doc)

    output = _run(args, settings, work)
    if args.file == "-":  # the document is the output, whatever --json says
        sys.stdout.buffer.write(output)
        sys.stdout.flush()
        return Output(None, "")
    Path(args.file).write_bytes(output)
    return Output(
        {"file": args.file, "bytes": len(output)}, f"Exported to {args.file} ({len(output)} bytes)."
    )


def _import(args: argparse.Namespace, settings: Settings) -> Output:
    doc = parse_document(Path(args.file).read_bytes())  # a bad document fails before any connection

    async def work(ctx: _Context) -> dict[str, Any]:
        with tqdm(total=len(doc.memories), unit="memory", desc="import") as bar:
            async with ctx.transaction() as deps:
                result = await PortabilityService(deps).import_document(doc, bar.update)
        return asdict(result)

    result = _run(args, settings, work)
    return Output(result, " ".join(f"{k}={v}" for k, v in result.items()))


def _reembed(args: argparse.Namespace, settings: Settings) -> Output:
    async def work(ctx: _Context) -> int:
        async with ctx.transaction() as deps:
            total = await Reembedder(deps).remaining(args.user)
        goal = min(total, args.limit) if args.limit else total
        done = 0
        size = args.batch_size or ctx.settings.reembed_batch_size
        with tqdm(total=goal, unit="memory", desc=f"reembed ({ctx.embedder.name})") as bar:
            while done < goal:
                async with ctx.transaction() as deps:  # one commit per batch: resumable
                    count = await Reembedder(deps).batch(args.user, min(size, goal - done))
                if count == 0:
                    break
                done += count
                bar.update(count)
        return done

    done = _run(args, settings, work)
    return Output({"reembedded": done}, f"reembedded={done}")


def register(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add the portability commands to the `engram` parser."""
    export = sub.add_parser(
        "export", parents=parents, help="export a tenant's (or a user's) memories to FILE ('-': stdout)"
    )
    export.add_argument("file")
    export.add_argument("--format", choices=("json", "markdown"), default="json")
    export.add_argument("--user", help="one user's memories (default: the whole tenant)")
    export.add_argument("--project", help="with --user: one project's memories")
    export.set_defaults(handler=_export)
    imp = sub.add_parser("import", parents=parents, help="import a JSON export from FILE (all or nothing)")
    imp.add_argument("file")
    imp.set_defaults(handler=_import)
    reembed = sub.add_parser(
        "reembed", parents=parents, help="re-embed memories whose vector is another model's"
    )
    reembed.add_argument("--user", help="one user's memories (default: the whole tenant)")
    reembed.add_argument("--batch-size", type=int, default=None, help="rows per embedding call and commit")
    reembed.add_argument("--limit", type=int, default=None, help="stop after this many rows")
    reembed.set_defaults(handler=_reembed)
    for command in (export, imp, reembed):
        command.add_argument("--tenant", default=DEV_TENANT, help=f"tenant name (default: {DEV_TENANT})")
