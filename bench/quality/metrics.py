"""The metrics of ../shared/BENCH.md, as pure functions over turn ids and context strings.

- evidence recall@budget: share of a question's gold turns with a unit in the context;
- the same counting only turns shown in full (`whole_turns`): every unit of the turn in the context, and
  none of them as a passage of it (Engram's long memories, app/memory/passages.py), a lower bound for
  systems that show part of a turn;
- staleness: whether the context holds a superseded (or out-of-scope) turn; reported as the share of
  questions that have stale labels;
- update order: the current turn is in the context and the superseded one absent or placed after it;
- recall@k: share of gold turns among the first k distinct turns of a system's ranking (no budget);
- substring scoring (expected / stale substrings, casefold) when a question has no turn ids.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.quality.model import Question

KS = (5, 10, 25, 50)


def unique(ids: Iterable[str]) -> list[str]:
    """Ids in first-seen order without repeats (a turn split into chunks counts once)."""
    return list(dict.fromkeys(ids))


def evidence_recall(evidence: Sequence[str], retrieved: Iterable[str]) -> float:
    gold = set(evidence)
    if not gold:
        raise ValueError("no evidence to recall")
    return len(gold & set(retrieved)) / len(gold)


def whole_turns(shown: Iterable[str], units_per_turn: Mapping[str, int]) -> list[str]:
    """The turns all of whose units are among `shown` (one entry per unit shown in full)."""
    counts = Counter(shown)
    return [turn for turn, n in counts.items() if n >= units_per_turn.get(turn, 1)]


def recall_at_k(evidence: Sequence[str], ranking: Sequence[str], k: int) -> float:
    return evidence_recall(evidence, unique(ranking)[:k])


def contains_any(ids: Iterable[str], retrieved: Iterable[str]) -> bool:
    return bool(set(ids) & set(retrieved))


def update_order(current: Sequence[str], stale: Sequence[str], retrieved: Sequence[str]) -> bool:
    """The current fact is present and every superseded one is absent or comes after it."""
    first: dict[str, int] = {}
    for position, turn_id in enumerate(retrieved):
        first.setdefault(turn_id, position)
    present = [first[c] for c in current if c in first]
    if not present:
        return False
    old = [first[s] for s in stale if s in first]
    return not old or min(present) < min(old)


def substring_share(expected: Sequence[str], context: str) -> float:
    lowered = context.casefold()
    return sum(e.casefold() in lowered for e in expected) / len(expected)


def any_substring(candidates: Sequence[str], context: str) -> bool:
    lowered = context.casefold()
    return any(c.casefold() in lowered for c in candidates)


@dataclass(frozen=True, slots=True)
class Score:
    recall: float | None  # None: the question has nothing to recall
    stale: bool | None  # None: the question has no stale labels
    update_ok: bool | None  # knowledge updates only
    both: bool | None  # contradictions only: both statements present
    abstained: bool  # empty context


def score(question: Question, retrieved: Sequence[str], context: str) -> Score:
    """One question against one context (`retrieved`: the turn ids of its lines, in order)."""
    if question.by_ids:
        recall = evidence_recall(question.evidence, retrieved) if question.evidence else None
        stale = contains_any(question.stale_evidence, retrieved) if question.stale_evidence else None
    else:
        recall = substring_share(question.expected, context) if question.expected else None
        stale = any_substring(question.stale, context) if question.stale else None
    update_ok = None
    if question.kind == "update" and question.evidence and question.stale_evidence:
        update_ok = update_order(question.evidence, question.stale_evidence, retrieved)
    both = None
    if question.kind == "contradiction" and question.evidence:
        both = set(question.evidence) <= set(retrieved)
    return Score(recall, stale, update_ok, both, not context.strip())


def ranks(question: Question, ranking: Sequence[str]) -> dict[str, float] | None:
    """recall@k for every k, or None when the question has no gold turns."""
    if not question.evidence:
        return None
    return {f"r@{k}": recall_at_k(question.evidence, ranking, k) for k in KS}


def mean(values: Iterable[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
