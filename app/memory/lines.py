"""The line a memory contributes to a recall context, and its token count kept with the memory.

A line is `- [<date> <type>[: <subject>]]` then a space and the content on one line. No cl100k
pre-token crosses from the closing bracket into the space that follows it, so the line's tokens are the
prefix's plus the body's (`" " + content`) exactly. The body's count depends on the content alone and is
stored with the memory when it is written (`content_tokens`); recall then encodes only prefixes, which
repeat (a date, a type, a subject), instead of every candidate's content. Packing still counts the
joined context exactly, so a wrong stored count could never break a token budget.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from app.lib.tokens import content_tokens, line_body

__all__ = ["content_tokens", "line_body", "line_prefix", "render_line"]


class LineSource(Protocol):
    """What a context line shows of a memory."""

    @property
    def type(self) -> str: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def content(self) -> str: ...
    @property
    def valid_from(self) -> datetime: ...


def line_prefix(memory: LineSource) -> str:
    label = memory.type if memory.subject is None else f"{memory.type}: {memory.subject}"
    return f"- [{memory.valid_from.date().isoformat()} {label}]"


def render_line(memory: LineSource) -> str:
    """The exact line a memory contributes to the context."""
    return line_prefix(memory) + line_body(memory.content)
