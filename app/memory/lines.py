"""The line a memory contributes to a recall context, and its token count kept with the memory.

Recall groups its context by day: a header line once per day (`8 May 2023`), then that day's memories as
`- <content>`, or `- [<label>] <content>` where the label adds meaning (`label`): the type unless it is
a plain `fact` or `episodic`, and the subject unless the content already names it. A standalone line
(`render_line`, what the bench's baselines return) carries its date instead: `- [<date>[ <label>]]`.

No cl100k pre-token crosses from a prefix (`-` or a closing bracket) into the space that follows it, so a
line's tokens are the prefix's plus the body's (`" " + content`) exactly. The body's count depends on the
content alone and is stored with the memory when it is written (`content_tokens`); recall then encodes
only prefixes and headers, which repeat, instead of every candidate's content. Packing still counts the
joined context exactly, so a wrong stored count could never break a token budget.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import lru_cache
from typing import Protocol

from app.lib.tokens import content_tokens, line_body

__all__ = [
    "content_tokens", "dated_prefix", "day_header", "label", "line_body", "line_prefix", "render_line",
    "superseded_mark",
]  # fmt: skip

# Types that say nothing a reader needs: the content is a plain statement or a conversation turn.
PLAIN_TYPES = frozenset({"fact", "episodic"})
_WORD = re.compile(r"\w+")


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


def label(memory: LineSource) -> str | None:
    """`type: subject`, `type` or `subject`, each only where it adds meaning; None when neither does."""
    shown_type = None if memory.type in PLAIN_TYPES else memory.type
    subject = memory.subject
    if subject is not None:
        named = set(_WORD.findall(memory.content.lower()))
        if all(word in named for word in _WORD.findall(subject.lower())):
            subject = None  # "I live in Porto (home city)." already says "home city"
    if shown_type and subject:
        return f"{shown_type}: {subject}"
    return shown_type or subject


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _day(when: datetime) -> str:
    return _day_text(when.date())


@lru_cache(maxsize=4096)
def _day_text(day: date) -> str:
    """A recall's candidates fall on few days: each day's text is made once."""
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def day_header(memory: LineSource) -> str:
    """The header line of the memory's day in a recall context: "8 May 2023" (5 tokens; the ISO form in
    brackets takes 8)."""
    return _day(memory.valid_from)


def superseded_mark(valid_to: datetime | None) -> str:
    """What a superseded memory's line says after its prefix: " (superseded 30 Nov 2026)". It ends with a
    bracket, so the line's tokens still add up (see the module's docstring)."""
    return " (superseded)" if valid_to is None else f" (superseded {_day(valid_to)})"


def line_prefix(memory: LineSource) -> str:
    """The prefix of the memory's line under its day's header."""
    shown = label(memory)
    return "-" if shown is None else f"- [{shown}]"


def dated_prefix(memory: LineSource) -> str:
    """The prefix of a standalone line, which carries its own date."""
    shown = label(memory)
    day = memory.valid_from.date().isoformat()
    return f"- [{day}]" if shown is None else f"- [{day} {shown}]"


def render_line(memory: LineSource) -> str:
    """The standalone line of a memory (its date on the line, no header)."""
    return dated_prefix(memory) + line_body(memory.content)
