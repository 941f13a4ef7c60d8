"""Run one test body against both SDK clients: `await run(client.op(...))` whatever the client's kind."""

from __future__ import annotations

import inspect
from typing import Any


async def run(value: Any) -> Any:
    """The result of an SDK call: awaited for `AsyncEngram`, as is for `Engram`."""
    return await value if inspect.isawaitable(value) else value


async def collect(items: Any) -> list[Any]:
    """Every item of an `iter_*` call (an iterator or an async iterator)."""
    if hasattr(items, "__aiter__"):
        return [item async for item in items]
    return list(items)
