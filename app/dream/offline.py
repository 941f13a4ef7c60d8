"""The offline dreamer's rules (pure): merge near-duplicates, forget what has decayed and never mattered.

Protected memories (pinned, critical rules) are left alone: people curate those by hand.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from app.dream.models import Candidate, Known
from app.memory.scoring import SECONDS_PER_DAY, decay
from app.memory.similarity import similar_pairs
from app.vocabulary import ProposalKind

MAX_CLUSTER = 20


def near_duplicates(
    live: Sequence[Known],
    inputs: Mapping[uuid.UUID, tuple[Sequence[float] | None, Mapping[str, int]]],
    threshold: float,
    *,
    k1: float,
    b: float,
) -> list[tuple[uuid.UUID, uuid.UUID, float]]:
    """Pairs of memories of the same type and project whose similarity (app.memory.similarity, the one
    recall's floor and forget-by-query compare) reaches `threshold`, with the statistics of the memories
    the dream reads (`inputs`: each one's vector, None when another model embedded it, and lexemes)."""
    groups: dict[tuple[str, str | None], list[Known]] = {}
    for k in live:
        if k.id in inputs:
            groups.setdefault((k.type, k.project_id), []).append(k)
    out: list[tuple[uuid.UUID, uuid.UUID, float]] = []
    for members in groups.values():
        vectors = [inputs[k.id][0] for k in members]
        texts = [inputs[k.id][1] for k in members]
        out += [
            (members[i].id, members[j].id, value)
            for i, j, value in similar_pairs(vectors, texts, threshold, k1=k1, b=b)
        ]
    return out


def duplicate_clusters(
    pairs: Iterable[tuple[uuid.UUID, uuid.UUID, float]],
) -> list[tuple[list[uuid.UUID], float]]:
    """Connected groups of near-duplicate pairs (union-find), each with its lowest pair cosine."""
    parent: dict[uuid.UUID, uuid.UUID] = {}

    def root(x: uuid.UUID) -> uuid.UUID:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    edges = list(pairs)
    for a, b, _ in edges:
        parent[root(a)] = root(b)
    groups: dict[uuid.UUID, list[uuid.UUID]] = {}
    for node in parent:
        groups.setdefault(root(node), []).append(node)
    lowest: dict[uuid.UUID, float] = {}
    for a, _, cosine in edges:
        r = root(a)
        lowest[r] = min(lowest.get(r, 1.0), cosine)
    return [(sorted(members)[:MAX_CLUSTER], lowest[r]) for r, members in groups.items() if len(members) > 1]


def merge_candidate(members: Sequence[Known], similarity: float) -> Candidate:
    """Keep the newest wording (then the most important) as the merged memory's text."""
    keeper = max(members, key=lambda k: (k.valid_from, k.importance))
    subjects = {m.subject for m in members}
    payload = {
        "content": keeper.content,
        "type": keeper.type,
        "subject": keeper.subject if len(subjects) == 1 else None,
        "importance": max(m.importance for m in members),
        "cosine": round(similarity, 4),  # the similarity; named before it was more than the cosine
        "similarity": round(similarity, 4),
        "kept_wording_of": str(keeper.id),
    }
    rationale = f"{len(members)} memories of type {keeper.type} say the same (similarity >= {similarity:.3f})"
    ids = tuple(sorted((m.id for m in members), key=lambda i: i != keeper.id))
    return Candidate(ProposalKind.MERGE, ids, payload, rationale)


def offline_merges(
    pairs: Iterable[tuple[uuid.UUID, uuid.UUID, float]], known: Mapping[uuid.UUID, Known]
) -> list[Candidate]:
    """One merge per cluster of unprotected near-duplicates of one type and project."""
    usable = [
        (a, b, c)
        for a, b, c in pairs
        if a in known and b in known and not known[a].protected and not known[b].protected
    ]
    return [
        merge_candidate([known[i] for i in members], cosine) for members, cosine in duplicate_clusters(usable)
    ]


def offline_forgets(
    known: Iterable[Known],
    now: datetime,
    *,
    half_lives: Mapping[str, float | None],
    importance_below: float,
    decayed_below: float,
) -> list[Candidate]:
    """Memories whose decayed salience fell below the floor and whose importance was low anyway."""
    out = []
    for k in known:
        half_life = half_lives.get(k.type)
        if k.protected or half_life is None or k.importance >= importance_below:
            continue
        age = max((now - (k.last_accessed_at or k.valid_from)).total_seconds(), 0.0) / SECONDS_PER_DAY
        decayed = decay(k.salience, age, half_life)
        if decayed < decayed_below:
            rationale = (
                f"decayed salience {decayed:.3f} < {decayed_below:.3f} after {age:.0f} days unused "
                f"(half-life {half_life:g} days), importance {k.importance:.2f}"
            )
            payload = {"decayed_salience": round(decayed, 4), "age_days": round(age, 1)}
            out.append(Candidate(ProposalKind.FORGET, (k.id,), payload, rationale))
    return out
