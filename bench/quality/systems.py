"""The baselines, over the same units, packed by the same greedy rule as Engram's packer.

- no_memory: an empty context.
- full_history: the most recent units that fit, shown in conversation order.
- dense: cosine between the question and every unit (the embedder under test), best first.
- bm25: Okapi BM25 (bench.quality.bm25), best first.

Packing mirrors `app.memory.packing.pack`: walk the ranking, take a line when it fits the budget
(lines joined by newlines), skip it otherwise and keep walking; the exact joined string is counted at the
end and trimmed if a join ever broke additivity, so `tokens <= budget` always.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.lib.tokens import TokenCounter
from bench.quality.bm25 import BM25
from bench.quality.units import Unit

BASELINES = ("no_memory", "full_history", "dense", "bm25")


@dataclass(slots=True)
class Packed:
    chosen: list[int]  # unit indices in context order
    context: str
    tokens: int


def pack(
    order: Sequence[int],
    units: Sequence[Unit],
    budget: int,
    counter: TokenCounter,
    *,
    chronological: bool = False,
) -> Packed:
    newline = counter.count("\n")
    smallest = min((u.tokens for u in units), default=0)
    chosen: list[int] = []
    used = 0
    for index in order:
        if budget - used < smallest + (newline if chosen else 0):
            break  # nothing left can fit
        cost = units[index].tokens + (newline if chosen else 0)
        if used + cost <= budget:
            chosen.append(index)
            used += cost
    if chronological:
        chosen.sort(key=lambda i: (units[i].at, i))
    context = "\n".join(units[i].line for i in chosen)
    tokens = counter.count(context)
    while tokens > budget:
        chosen.pop()
        context = "\n".join(units[i].line for i in chosen)
        tokens = counter.count(context)
    return Packed(chosen, context, tokens)


class Baselines:
    """The four baselines over one conversation's units (one mode, one embedder)."""

    def __init__(self, units: Sequence[Unit], vectors: np.ndarray | None, counter: TokenCounter) -> None:
        self.units = units
        self.vectors = vectors
        self.counter = counter
        self.bm25 = BM25([u.content for u in units])
        self.recency = sorted(range(len(units)), key=lambda i: (units[i].at, i), reverse=True)

    def ranking(self, system: str, query: str, qvec: Sequence[float] | None) -> tuple[list[int], float]:
        """(unit indices best first, milliseconds it took)."""
        started = time.perf_counter()
        if system == "no_memory":
            order: list[int] = []
        elif system == "full_history":
            order = self.recency
        elif system == "dense":
            if self.vectors is None or qvec is None or not len(self.units):
                order = []
            else:
                scores = self.vectors @ np.asarray(qvec, dtype=np.float32)
                order = np.argsort(-scores, kind="stable").tolist()
        elif system == "bm25":
            order = self.bm25.rank(query)
        else:
            raise ValueError(f"unknown baseline {system!r}")
        return order, (time.perf_counter() - started) * 1000

    def retrieve(self, system: str, order: Sequence[int], budget: int) -> Packed:
        return pack(order, self.units, budget, self.counter, chronological=system == "full_history")
