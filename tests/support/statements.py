"""The SQL statements an engine sends while a block runs (SQLAlchemy's `before_cursor_execute`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine


@contextmanager
def statements_sent(engine: AsyncEngine, each: Callable[[str], None] | None = None) -> Iterator[list[str]]:
    """Every statement `engine` sends while the block runs, in order; `each`, if given, is called with
    each one as it is sent."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)
        if each is not None:
            each(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
