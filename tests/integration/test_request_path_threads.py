"""No callable on a request's path is handed to a thread: Litestar runs a plain-function guard or
`before_request` hook, and a dependency or handler marked `sync_to_thread`, in its thread pool, a hand-off
and a wait for the GIL on every request (docs/PERFORMANCE.md, "Workers and the CPU cost of a request").
None of Engram's does I/O in such a function, so each must be `async def` (or a dependency called inline)."""

from __future__ import annotations

from typing import Any

from litestar.routes import HTTPRoute
from litestar.testing import AsyncTestClient
from litestar.utils.sync import AsyncCallable


async def test_no_guard_hook_dependency_or_handler_runs_in_a_thread(client: AsyncTestClient[Any]) -> None:
    handlers = [
        h for route in client.app.routes if isinstance(route, HTTPRoute) for h in route.route_handlers
    ]
    assert len(handlers) > 50  # every REST route, the inspector's and the operations'
    threaded: list[str] = []
    for handler in handlers:
        where = f"{sorted(handler.http_methods)} {handler.paths}"
        hook = handler.resolve_before_request()
        if isinstance(hook, AsyncCallable):
            threaded.append(f"{where}: before_request {hook.func.__qualname__}")
        threaded += [
            f"{where}: guard {guard.func.__qualname__}"
            for guard in handler.resolve_guards()
            if isinstance(guard, AsyncCallable)
        ]
        threaded += [
            f"{where}: dependency {name}"
            for name, provide in handler.resolve_dependencies().items()
            if provide.sync_to_thread
        ]
        if handler.sync_to_thread:
            threaded.append(f"{where}: handler {handler.handler_name}")
    assert not threaded, "\n".join(threaded)
