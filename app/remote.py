"""`engram remember` and `engram recall`: the SDK against a running service, for scripts.

The key comes from `ENGRAM_API_KEY`, else from the development key the embedded service wrote in the
data directory; the URL from `--url`, else `ENGRAM_URL`, else http://localhost:8000.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec

from app.bootstrap import DEV_KEY_FILE
from app.lib.console import CommandFailed, Output
from app.lib.settings import Settings

T = TypeVar("T")


def client_key(settings: Settings) -> str:
    """The API key a local client uses: `ENGRAM_API_KEY`, else the embedded service's dev key file."""
    if settings.client_api_key is not None and settings.client_api_key.get_secret_value().strip():
        return settings.client_api_key.get_secret_value().strip()
    key_file = settings.data_dir / DEV_KEY_FILE
    try:
        key = key_file.read_text().strip()
    except FileNotFoundError:
        key = ""
    if not key:
        raise CommandFailed(
            "unauthorized",
            f"no API key: set ENGRAM_API_KEY (the embedded `engram serve` writes one to {key_file})",
        )
    return key


def _call(args: argparse.Namespace, settings: Settings, operation: Callable[[Any], T]) -> T:
    """Run one SDK call; the SDK's errors become the CLI's (same codes, hence the same exit codes)."""
    try:
        import engram_sdk  # its own distribution (sdk/python); only these commands need it
    except ImportError as exc:
        raise CommandFailed("error", "these commands need the SDK: pip install -e sdk/python") from exc

    url = args.url or settings.client_url
    retry = engram_sdk.RetryPolicy(max_retries=args.retries)
    try:
        with engram_sdk.Engram(url, client_key(settings), retry=retry, timeout=args.timeout) as client:
            return operation(client)
    except engram_sdk.ConnectionFailedError as exc:
        raise CommandFailed(exc.code, f"cannot reach the service at {url} ({exc.detail})") from exc
    except engram_sdk.EngramError as exc:
        raise CommandFailed(exc.code, exc.detail) from exc


def _content(args: argparse.Namespace) -> str:
    content = sys.stdin.read() if args.content == "-" else args.content
    if not content.strip():
        raise CommandFailed("usage", "nothing to remember: give the content, or '-' to read it from stdin")
    return content.strip()


def _remember(args: argparse.Namespace, settings: Settings) -> Output:
    content = _content(args)
    result = _call(
        args,
        settings,
        lambda client: client.remember(
            args.user,
            content,
            type=args.type,
            subject=args.subject,
            project_id=args.project,
            session_id=args.session,
            importance=args.importance,
            confidence=args.confidence,
            privacy=args.privacy,
            tags=args.tag,
            ttl_seconds=args.ttl,
            pinned=args.pin or None,
        ),
    )
    memory = result.memory
    lines = [f"{result.action} {memory.id} ({memory.type}{f': {memory.subject}' if memory.subject else ''})"]
    lines += [f"superseded {old}" for old in result.superseded]
    lines += [f"proposal {p} awaits review (the current memory is protected)" for p in result.proposals]
    if result.redacted:
        lines.append("secrets were redacted before storing")
    return Output(msgspec.to_builtins(result), "\n".join(lines))


def _recall(args: argparse.Namespace, settings: Settings) -> Output:
    result = _call(
        args,
        settings,
        lambda client: client.recall(
            args.user,
            args.query,
            project_id=args.project,
            token_budget=args.budget,
            types=args.type,
            min_relevance=args.min_relevance,
            include_sensitive=args.include_sensitive or None,
        ),
    )
    # The text output is the context itself, ready to paste into a prompt (empty: nothing relevant).
    return Output(msgspec.to_builtins(result), result.context)


def _connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the service (default: $ENGRAM_URL or http://localhost:8000)")
    parser.add_argument("--retries", type=int, default=2, help="retries on 429 / 5xx / refused (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--user", required=True, help="the end user whose memories these are")
    parser.add_argument("--project", help="a project scope inside the user")


def register(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add `remember` and `recall` to the `engram` parser."""
    # Types and privacy levels are the service's to check (422: exit 6), so the CLI never lags behind it.
    remember = sub.add_parser("remember", parents=parents, help="store a memory in a running service")
    remember.add_argument("content", help="the memory's text ('-': read it from stdin)")
    _connection(remember)
    remember.add_argument("--type", help="memory type: fact (default), preference, decision, constraint ...")
    remember.add_argument("--subject", help="the slot: a newer memory with this subject and type supersedes")
    remember.add_argument("--session", help="the conversation it came from")
    remember.add_argument("--importance", type=float)
    remember.add_argument("--confidence", type=float)
    remember.add_argument("--privacy", help="public (default), private or sensitive")
    remember.add_argument("--tag", action="append", help="a tag (repeatable)")
    remember.add_argument("--ttl", type=int, help="expire after this many seconds")
    remember.add_argument("--pin", action="store_true", help="pin it (always recalled first)")
    remember.set_defaults(handler=_remember)

    recall = sub.add_parser("recall", parents=parents, help="print the context a running service recalls")
    recall.add_argument("query")
    _connection(recall)
    recall.add_argument("--budget", type=int, help="token budget of the context (default 1024)")
    recall.add_argument("--type", action="append", help="only this memory type (repeatable)")
    recall.add_argument("--min-relevance", type=float)
    recall.add_argument("--include-sensitive", action="store_true")
    recall.set_defaults(handler=_recall)
