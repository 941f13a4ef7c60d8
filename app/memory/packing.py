"""Choosing what goes into the context: slot veto, dedupe, relevance floor, greedy token packing.

Pure: takes plain candidates and a token counter, returns what was included and why the rest was not.
The budget is checked against the exact string that is returned, so `tokens_used <= budget` always.

Items may carry a header (their day, app.memory.lines): the context shows each header once, on its own
line, above its items, and a header costs budget the first time one of its items is taken. Groups
appear in the order their first item was taken, items within a group in the order they were taken, so
the first memory is still the first taken, and `Packed.included` is in context order: its i-th item is
the context's i-th line that is not a header.

A long memory's item may carry an excerpt (its best passage, app/memory/passages.py). It goes in as the
excerpt, and once every memory has had its turn it is shown whole instead where the budget left allows
(`passages_first`; else whole when it fits the room left, and as the excerpt only when that fits). An
excerpt is taken only while the room left is at least twice its size: a part of one memory never takes
the room of the whole memories after it. `Included.excerpt` says which way a memory went in; either way
the line is the memory's (`Included.item.ref`).

Standing memories (pinned, critical rules, constraints: `PackItem.standing`) hold for questions that do
not name them ("I am allergic to peanuts" for a dinner question), so they may enter below the relevance
floor, but only within `standing_share` of the budget, the most relevant to the question first, and they
are placed first. A standing memory that says when it applies ("Always give exact times when I ask about
meetings": `PackItem.conditional`) holds only for questions about its condition: below the floor, the
part of the share open to it shrinks with its relevance (all of it at the floor, none at zero), so a
rule about meetings takes no room from a question about scholarships. Past the share they compete on
score like any memory, above the floor: a question never gets a context spent on standing instructions
regardless of what it asks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Generic, TypeVar

T = TypeVar("T")


class SkipReason(StrEnum):
    BUDGET = "budget"
    BELOW_FLOOR = "below_floor"
    SLOT_VETO = "slot_veto"
    DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A passage of a long memory as its line shows it: `ordinal`, characters [start, end) of the
    content, the line's tokens, and the line itself (`render`: made only if the passage is shown)."""

    ordinal: int
    start: int
    end: int
    tokens: int
    render: Callable[[], str]

    @property
    def line(self) -> str:
        return self.render()


@dataclass(slots=True)
class PackItem(Generic[T]):
    """One candidate as the packer weighs it. Built for every candidate of every recall and changed by
    nothing after but its line's rendering (`text`); not frozen also because a frozen dataclass's 13
    `object.__setattr__` calls cost ~2 us against ~0.3 (docs/PERFORMANCE.md)."""

    ref: T
    # The whole line, or what renders it: a long memory's line is made only if the packer counts or
    # shows it (`text`), and most candidates are neither.
    line: str | Callable[[], str]
    score: float
    relevance: float
    always: bool  # pinned or critical: keeps its slot until a person approves a replacement; standing
    slot: tuple[str, str] | None  # (subject, type) or None when the memory is not in a slot
    content_hash: str
    valid_from: datetime
    tokens: int | None = None  # the line's token count when already known; else it is counted
    # Holds whatever the question (a constraint; `always` implies it): may enter below the floor within
    # the standing share of the budget.
    standing: bool = False
    # A standing memory that says when it applies ("... when I ask about deadlines"): below the floor it
    # may use only the part of the standing share that its relevance is of the floor.
    conditional: bool = False
    header: str | None = None  # the line the item is shown under, once per context (its day)
    excerpt: Excerpt | None = None  # its best passage: shown instead when the whole line does not fit

    @property
    def holds(self) -> bool:
        """Standing: placed first within the standing share, exempt from the floor there."""
        return self.always or self.standing

    def text(self) -> str:
        """The whole line (rendered on first use)."""
        if not isinstance(self.line, str):
            self.line = self.line()
        return self.line


@dataclass(frozen=True, slots=True)
class Included(Generic[T]):
    item: PackItem[T]
    tokens: int
    excerpt: Excerpt | None = None  # shown as this passage rather than whole

    @property
    def line(self) -> str:
        return self.item.text() if self.excerpt is None else self.excerpt.line


@dataclass(frozen=True, slots=True)
class Skipped(Generic[T]):
    item: PackItem[T]
    reason: SkipReason


@dataclass(slots=True)
class Packed(Generic[T]):
    context: str = ""
    tokens_used: int = 0
    included: list[Included[T]] = field(default_factory=list)
    skipped: list[Skipped[T]] = field(default_factory=list)


def _slot_rank(item: PackItem[T]) -> tuple[bool, float, float]:
    # A pinned memory or critical rule keeps its slot until a person approves its replacement: the
    # write path only proposed it, so a second protected memory in the slot is the unapproved one
    # and the older protected memory wins. Otherwise the newest fact wins; the score breaks ties.
    when = item.valid_from.timestamp()
    return (item.always, -when if item.always else when, item.score)


def _veto(items: Sequence[PackItem[T]]) -> tuple[list[PackItem[T]], list[Skipped[T]]]:
    """One memory per slot (protected first, else the newest), one per content."""
    newest: dict[tuple[str, str], PackItem[T]] = {}
    for item in items:
        if item.slot is not None:
            best = newest.get(item.slot)
            if best is None or _slot_rank(item) > _slot_rank(best):
                newest[item.slot] = item
    kept: list[PackItem[T]] = []
    skipped: list[Skipped[T]] = []
    seen_hashes: set[str] = set()
    for item in sorted(items, key=lambda i: i.score, reverse=True):
        if item.slot is not None and newest[item.slot] is not item:
            skipped.append(Skipped(item, SkipReason.SLOT_VETO))
        elif item.content_hash in seen_hashes:
            skipped.append(Skipped(item, SkipReason.DUPLICATE))
        else:
            seen_hashes.add(item.content_hash)
            kept.append(item)
    return kept, skipped


def pack(
    items: Sequence[PackItem[T]],
    *,
    budget: int,
    min_relevance: float,
    count_tokens: Callable[[str], int],
    at_least: Callable[[str], int] | None = None,
    standing_share: float = 0.25,
    passages_first: bool = True,
) -> Packed[T]:
    """Standing memories by relevance into `standing_share` of the budget (a conditional one below the
    floor into its relevance's fraction of it), then every memory above the floor
    by score into the rest of `budget` tokens of the rendered context (lines joined by newlines).

    A long memory with an excerpt (`passages_first`): taken as its excerpt while the room left is at
    least twice the excerpt, and once every memory has had its turn, shown whole instead, best first,
    where what is left of the budget allows; else taken whole when it fits the room left, and as its
    excerpt when only that fits (with the same room).

    `at_least` is a cheap lower bound of `count_tokens`: a line it already shows too long for the room
    left is skipped without being counted. Once the budget is nearly full most candidates are, and on a
    large scope counting them was most of the packing time; what is packed does not change.
    """
    kept, skipped = _veto(items)
    result: Packed[T] = Packed(skipped=skipped)
    relevant: list[PackItem[T]] = []
    standing: list[PackItem[T]] = []
    for item in kept:
        if item.holds:
            standing.append(item)
        elif item.relevance >= min_relevance:
            relevant.append(item)
        else:
            result.skipped.append(Skipped(item, SkipReason.BELOW_FLOOR))
    # Lines start with "- " and end without whitespace, so the newline between two lines is a
    # pre-token boundary and counts add up; the exact count of the final string is still checked.
    filler = _Filler(result, count_tokens, at_least, passages_first)
    # The most relevant to the question first; `sort` is stable: ties keep the candidates' order.
    standing.sort(key=lambda i: (-i.relevance, -i.score))
    rest: list[PackItem[T]] = []
    for item in standing:
        if not filler.add(item, int(budget * standing_share * _open_share(item, min_relevance))):
            if item.relevance >= min_relevance:
                rest.append(item)  # past the share, it competes on relevance like any memory
            else:
                result.skipped.append(Skipped(item, SkipReason.BUDGET))
    rest += relevant
    rest.sort(key=lambda i: -i.score)
    for item in rest:
        if not filler.add(item, budget):
            result.skipped.append(Skipped(item, SkipReason.BUDGET))
    filler.widen(budget)
    result.included = _grouped(result.included)
    result.context = render(result.included)
    result.tokens_used = count_tokens(result.context)
    while result.tokens_used > budget:  # only if a line broke the additivity assumption
        dropped = result.included.pop()
        result.skipped.append(Skipped(dropped.item, SkipReason.BUDGET))
        result.context = render(result.included)
        result.tokens_used = count_tokens(result.context)
    return result


def _open_share(item: PackItem[T], min_relevance: float) -> float:
    """How much of the standing share `item` may use: all of it, except a conditional memory below the
    floor, which may use its relevance's fraction of the floor."""
    if not item.conditional or item.relevance >= min_relevance or min_relevance <= 0:
        return 1.0
    return max(item.relevance, 0.0) / min_relevance


def _grouped(included: list[Included[T]]) -> list[Included[T]]:
    """Items under the same header together, groups in the order of their first item (stable)."""
    groups: dict[str | None, list[Included[T]]] = {}
    for inc in included:
        groups.setdefault(inc.item.header, []).append(inc)
    return [inc for group in groups.values() for inc in group]


def render(included: Sequence[Included[T]]) -> str:
    """The context: each header once, above its items' lines (`included` already grouped)."""
    lines: list[str] = []
    header: str | None = None
    for inc in included:
        if inc.item.header is not None and inc.item.header != header:
            lines.append(inc.item.header)
        header = inc.item.header
        lines.append(inc.line)
    return "\n".join(lines)


class _Filler(Generic[T]):
    """Adds lines to a `Packed` while their tokens (and the newlines between them) fit a limit."""

    def __init__(
        self,
        into: Packed[T],
        count_tokens: Callable[[str], int],
        at_least: Callable[[str], int] | None,
        passages_first: bool,
    ) -> None:
        self.into, self.count_tokens, self.at_least = into, count_tokens, at_least
        self.passages_first = passages_first
        self.newline = count_tokens("\n")
        self.used = 0
        self.headers: set[str | None] = {None}  # the headers shown so far

    def add(self, item: PackItem[T], limit: int) -> bool:
        """Include `item` if it fits within `limit` tokens in all, whole or else as its excerpt; False
        (nothing changed) if neither does."""
        separator = self.newline if self.into.included else 0
        header = item.header if item.header not in self.headers else None  # a header not shown yet
        if header is not None:
            separator += self.count_tokens(header) + self.newline
        room = limit - self.used - separator
        # A passage is part of a memory: taken only while at least as much room is left after it, so
        # excerpts never crowd out the whole memories further down the ranking.
        excerpt = item.excerpt if item.excerpt is not None and 2 * item.excerpt.tokens <= room else None
        tokens = None if excerpt is not None and self.passages_first else self._whole(item, room)
        if tokens is not None:
            excerpt = None
        elif excerpt is None:
            return False
        else:
            tokens = excerpt.tokens
        if header is not None:
            self.headers.add(header)
        self.into.included.append(Included(item, tokens, excerpt))
        self.used += tokens + separator
        return True

    def widen(self, limit: int) -> None:
        """Show whole, best first, the memories taken as excerpts whose whole line fits what is left."""
        included = self.into.included
        for index, inc in enumerate(included):
            if inc.excerpt is not None:
                tokens = self._whole(inc.item, limit - self.used + inc.tokens)
                if tokens is not None:
                    included[index] = Included(inc.item, tokens)
                    self.used += tokens - inc.tokens

    def _whole(self, item: PackItem[T], room: int) -> int | None:
        """The tokens of the item's whole line if it fits in `room`, else None."""
        if item.tokens is None and self.at_least is not None and self.at_least(item.text()) > room:
            return None
        tokens = item.tokens if item.tokens is not None else self.count_tokens(item.text())
        return tokens if tokens <= room else None
