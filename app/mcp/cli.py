"""`engram mcp`: serve the tool catalogue over stdio (see `app.mcp.stdio`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import anyio

from app.bootstrap import prepare_database
from app.lib.console import Output
from app.lib.settings import Settings
from app.mcp.local import Caller, check_agent, check_user
from app.remote import client_key


def _mcp(args: argparse.Namespace, settings: Settings) -> Output:
    from app.mcp import stdio

    caller = Caller(
        key=client_key(settings),
        user_id=check_user(args.user or settings.mcp_user),
        agent_id=check_agent(args.agent),
    )
    url = args.url or (settings.client_url if "client_url" in settings.model_fields_set else None)
    if url:
        anyio.run(stdio.serve_remote, url, caller, args.timeout)
        return Output({"stopped": True}, "")
    prepared = prepare_database(settings)
    try:
        anyio.run(stdio.serve_local, prepared.settings, caller)
    finally:
        if prepared.embedded is not None:
            prepared.embedded.stop()
    return Output({"stopped": True}, "")


def register(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser(
        "mcp",
        parents=parents,
        help="serve the MCP tools over stdio (key: ENGRAM_API_KEY; --url: through a running service)",
    )
    mcp.add_argument("--url", help="a running service (default: $ENGRAM_URL if set; else the local store)")
    mcp.add_argument(
        "--user", help="the end user whose memories the session works on (default $ENGRAM_MCP_USER)"
    )
    mcp.add_argument(
        "--agent", help="the agent the session is: its private memories and granted spaces (default: none)"
    )
    mcp.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per call to the service (default 60)"
    )
    mcp.set_defaults(handler=_mcp)
