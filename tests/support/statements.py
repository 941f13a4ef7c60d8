"""The SQL statements an engine sends while a block runs (SQLAlchemy's `before_cursor_execute`, or
`after_cursor_execute` for those whose results have come back)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine


@contextmanager
def statements_sent(
    engine: AsyncEngine, each: Callable[[str], None] | None = None, *, answered: bool = False
) -> Iterator[list[str]]:
    """Every statement `engine` sends while the block runs, in order; `each`, if given, is called with
    each one as it is sent (`answered`: once its result has come back)."""
    statements: list[str] = []
    hook = "after_cursor_execute" if answered else "before_cursor_execute"

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)
        if each is not None:
            each(statement)

    event.listen(engine.sync_engine, hook, record)
    try:
        yield statements
    finally:
        event.remove(engine.sync_engine, hook, record)
