"""Passages of a long memory: sentence-aligned windows of its content, each of at most `max_tokens`.

Pure: text in, character spans out. A memory whose line body (app/lib/tokens.py `line_body`) is longer
than one passage is cut into the fewest windows that fit, each as close to an even share of the content
as whole sentences allow, so no passage is a stray tail of a few words. Windows end where sentences do:
at a newline (a paragraph, a list item, a line of code) or after a word ending in `.`, `!`, `?` or `…`
(and any closing quote or bracket); a sentence longer than a window is cut between words, and a word
longer than a window between characters. Windows do not overlap: every word of the content is in
exactly one passage.

Recall ranks a long memory by its best passage and, when the whole memory does not fit the budget left,
may show that passage instead (app/memory/packing.py). Its line marks a cut with `…` where the passage
does not start at the content's beginning or end at its end, so a reader knows it holds part of a
memory. The marks are counted: a passage's `tokens` are those of its body with the marks, at most
`max_tokens`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.lib.tokens import line_body

MARK = "…"
_MARKS_TOKENS = 2  # room for the two marks while windows are filled; the exact count is checked after
_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


class Tokens(Protocol):
    """What splitting needs of a token counter (app.lib.tokens.TokenCounter)."""

    def count(self, text: str) -> int: ...
    def word_tokens(self, words: Sequence[str]) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class Span:
    """A passage: characters [start, end) of the content (code points, as PostgreSQL's substr counts)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Piece:
    start: int
    end: int
    tokens: int


def _sentences(words: Sequence[re.Match[str]], content: str) -> list[tuple[int, int]]:
    """Word index ranges [i, j) of the sentences: one ends at a newline or after a word ending in
    sentence punctuation."""
    out: list[tuple[int, int]] = []
    first = 0
    for i in range(1, len(words)):
        previous = words[i - 1]
        if "\n" in content[previous.end() : words[i].start()] or _SENTENCE_END.search(previous.group()):
            out.append((first, i))
            first = i
    out.append((first, len(words)))
    return out


def _cut_word(content: str, start: int, end: int, limit: int, count: Callable[[str], int]) -> list[_Piece]:
    """A run without whitespace cut between characters into pieces of at most `limit` tokens."""
    pieces: list[_Piece] = []
    while start < end:
        low, high = start + 1, end
        while low < high:  # the longest prefix that fits; at least one character
            middle = (low + high + 1) // 2
            if count(" " + content[start:middle]) <= limit:
                low = middle
            else:
                high = middle - 1
        pieces.append(_Piece(start, low, count(" " + content[start:low])))
        start = low
    return pieces


def _pieces(content: str, limit: int, tokens: Tokens) -> list[_Piece]:
    """Sentences that fit `limit` tokens; longer ones cut between words (a word, between characters)."""
    words = list(_WORD.finditer(content))
    costs = tokens.word_tokens([w.group() for w in words])
    pieces: list[_Piece] = []
    for first, stop in _sentences(words, content):
        run: _Piece | None = None
        for i in range(first, stop):
            word, cost = words[i], costs[i]
            if cost > limit:
                if run is not None:
                    pieces.append(run)
                    run = None
                pieces.extend(_cut_word(content, word.start(), word.end(), limit, tokens.count))
            elif run is not None and run.tokens + cost <= limit:
                run = _Piece(run.start, word.end(), run.tokens + cost)
            else:
                if run is not None:
                    pieces.append(run)
                run = _Piece(word.start(), word.end(), cost)
        if run is not None:
            pieces.append(run)
    return pieces


def _windows(pieces: Sequence[_Piece], limit: int) -> list[Span]:
    """Consecutive pieces in the fewest windows of at most `limit` tokens, filled towards an even share."""
    total = sum(p.tokens for p in pieces)
    share = total / math.ceil(total / limit)
    spans: list[Span] = []
    start, end, used = pieces[0].start, pieces[0].start, 0
    for piece in pieces:
        if used and (used + piece.tokens > limit or used >= share):
            spans.append(Span(start, end))
            start, used = piece.start, 0
        end, used = piece.end, used + piece.tokens
    spans.append(Span(start, end))
    return spans


def split(content: str, max_tokens: int, tokens: Tokens) -> list[Span]:
    """The passages of `content`, or none when its line body fits in one (`max_tokens` or fewer)."""
    if max_tokens <= _MARKS_TOKENS or tokens.count(line_body(content)) <= max_tokens:
        return []
    limit = max_tokens - _MARKS_TOKENS
    spans = _windows(_pieces(content, limit, tokens), limit)
    fitted: list[Span] = []
    for span in spans:  # word counts add up to within a token or two of the exact count: checked here
        fitted.extend(_fit(content, span, max_tokens, tokens))
    return fitted if len(fitted) > 1 else []


def _fit(content: str, span: Span, max_tokens: int, tokens: Tokens) -> list[Span]:
    """`span` as is when its excerpt fits `max_tokens`, else halved between words until each half does."""
    if tokens.count(excerpt(content, span)) <= max_tokens:
        return [span]
    words = list(_WORD.finditer(content, span.start, span.end))
    if len(words) < 2:
        return [span]  # one word, already cut to fit without its marks
    middle = words[len(words) // 2].start()
    return [
        *_fit(content, Span(span.start, words[len(words) // 2 - 1].end()), max_tokens, tokens),
        *_fit(content, Span(middle, span.end), max_tokens, tokens),
    ]


def excerpt(content: str, span: Span) -> str:
    """The passage's line body: on one line after one space, `…` where it cuts the content."""
    body = line_body(content[span.start : span.end])
    head = MARK if content[: span.start].strip() else ""
    tail = MARK if content[span.end :].strip() else ""
    return f" {head}{body[1:]}{tail}"


def excerpt_tokens(content: str, spans: Sequence[Span], count: Callable[[str], int]) -> list[int]:
    """Each passage's tokens as its line body shows it (what `memory_passages.tokens` stores)."""
    return [count(excerpt(content, span)) for span in spans]
