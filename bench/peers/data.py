"""The peer line's data: facts spread evenly over users, queries aimed at users, and the exact answer.

Everything here is pure (no database, no model): the same seeds give the same facts and queries to
every system, and the exact per-user top-k is brute-force cosine over the vectors the bench computed
itself with the same model, in numpy.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.perf.data import TextGenerator


@dataclass(frozen=True)
class Fact:
    user_id: str
    text: str


@dataclass(frozen=True)
class Query:
    user_id: str
    text: str


def user_ids(users: int) -> list[str]:
    return [f"user-{i:03d}" for i in range(users)]


def facts(total: int, users: int, seed: int = 7) -> list[Fact]:
    """`total` distinct sentences, `total // users` per user (the remainder to the first users)."""
    if users < 1 or total < users:
        raise ValueError("need at least one fact per user")
    text = TextGenerator(seed=seed)
    seen: set[str] = set()
    out: list[Fact] = []
    ids = user_ids(users)
    for i in range(total):
        sentence = text.sentence()
        while sentence in seen:  # distinct texts: results are matched back to facts by their text
            sentence = text.sentence()
        seen.add(sentence)
        out.append(Fact(ids[i % users], sentence))
    return out


def queries(count: int, users: int, seed: int = 21) -> list[Query]:
    """`count` queries, each aimed at a user chosen at random (every system gets the same list)."""
    text = TextGenerator(seed=seed)
    rng = random.Random(seed)
    ids = user_ids(users)
    return [Query(rng.choice(ids), text.query()) for _ in range(count)]


def exact_top_k(
    fact_list: Sequence[Fact], vectors: np.ndarray, query: Query, query_vector: np.ndarray, k: int
) -> list[str]:
    """Texts of the user's `k` facts nearest to the query by cosine, best first (brute force)."""
    rows = [i for i, f in enumerate(fact_list) if f.user_id == query.user_id]
    if not rows:
        return []
    mine = vectors[rows]
    norms = np.linalg.norm(mine, axis=1) * float(np.linalg.norm(query_vector))
    cosines = (mine @ query_vector) / np.where(norms == 0, 1.0, norms)
    order = np.argsort(-cosines, kind="stable")[:k]
    return [fact_list[rows[i]].text for i in order]


def overlap(got: Sequence[str], exact: Sequence[str]) -> float:
    """Share of the exact top-k found in `got` (1.0 when there is nothing to find)."""
    if not exact:
        return 1.0
    return len(set(got) & set(exact)) / len(exact)


def facts_per_user(fact_list: Sequence[Fact]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in fact_list:
        counts[f.user_id] = counts.get(f.user_id, 0) + 1
    return counts
