"""Recall scoring: pure functions over plain values, each component visible in the trace.

score = w_s*semantic + w_k*keyword + w.recency*recency + w.salience*effective_salience
      + w.importance*importance + w.confidence*confidence + type_prior + w.project_match*project_match
      + w.pinned_bonus*(pinned or critical) - w.privacy_penalty*(private)
      + neighbour_weight*neighbour
semantic and keyword are the fusion's components (app.memory.fusion; w_s, w_k:
`RankingPolicy.relevance_weights`). relevance (what the minimum-relevance floor applies to) is the one
similarity of app.memory.similarity for a question, max(cosine, saturated BM25), under every fusion:
how much the
memory is about the query, whatever its salience and whatever the other candidates (a normalised or
rank-based component is 1 for the best match of any query, relevant or not).
neighbour is the best relevance share (`relevance_share`) of the memory's neighbours in its conversation,
the memories of its session just before and after it: a turn answering a question is often found by the
turn that asked it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from app.lib.ranking import RankingPolicy
from app.memory.fusion import Relevance, clamp, saturate
from app.memory.similarity import coverage, query_keyword, similarity
from app.vocabulary import Privacy

SECONDS_PER_DAY = 86400.0


class Scorable(Protocol):
    """What scoring reads of one candidate (`ScoreInput`, or recall's `CandidateRow` as loaded)."""

    @property
    def cosine(self) -> float | None: ...
    @property
    def keyword_rank(self) -> float: ...
    @property
    def keyword_ideal(self) -> float: ...
    @property
    def type(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def confidence(self) -> float: ...
    @property
    def salience(self) -> float: ...
    @property
    def protected(self) -> bool: ...
    @property
    def privacy(self) -> str: ...
    @property
    def project_id(self) -> str | None: ...
    @property
    def valid_from(self) -> datetime: ...
    @property
    def last_accessed_at(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class ScoreInput:
    """What scoring needs to know about one candidate."""

    cosine: float | None  # None when the row has no comparable embedding (e.g. another embed model)
    keyword_rank: float  # BM25; 0 when the text did not match
    type: str
    importance: float
    confidence: float
    salience: float
    protected: bool  # pinned or a critical rule (app.vocabulary.is_protected)
    privacy: str
    project_id: str | None
    valid_from: datetime
    last_accessed_at: datetime | None
    keyword_ideal: float = 0.0  # the query's ideal BM25 (app.memory.similarity); 0: no keyword coverage


@dataclass(slots=True)
class Scored:  # one per candidate per recall: not frozen, as recall's other per-candidate values
    score: float
    relevance: float
    components: dict[str, float]


def decay(value: float, age_days: float, half_life_days: float | None) -> float:
    """Exponential decay `value * 0.5 ** (age / half_life)`; no half-life means no decay."""
    if half_life_days is None or half_life_days <= 0:
        return value
    return value * math.pow(0.5, max(age_days, 0.0) / half_life_days)


def relevance_share(fused: Relevance, weights: tuple[float, float]) -> float:
    """How relevant a candidate is by its two fused components alone, in [0, 1]: their weighted mean."""
    w_semantic, w_keyword = weights
    total = w_semantic + w_keyword
    return (w_semantic * fused.semantic + w_keyword * fused.keyword) / total if total > 0 else 0.0


def keyword_score(rank: float, saturation: float) -> float:
    """Map an unbounded text rank to [0, 1) so one keyword hit is comparable across queries."""
    return saturate(rank, saturation)


def _age_days(now: datetime, then: datetime) -> float:
    return max((now - then).total_seconds(), 0.0) / SECONDS_PER_DAY


def score(
    item: Scorable,
    *,
    now: datetime,
    policy: RankingPolicy,
    project_id: str | None,
    fused: Relevance | None = None,
    neighbour: float = 0.0,
) -> Scored:
    """The score of one candidate, with every component that went into it. `fused`: its relevance
    components from `fusion.fuse` over the recall's candidates; None: the weighted fusion's.
    `neighbour`: its neighbours' best `relevance_share` (0: none among the candidates)."""
    weights = policy.weights
    cosine = clamp(item.cosine)
    saturated = keyword_score(item.keyword_rank, policy.keyword_saturation)
    if fused is None:
        semantic, keyword, w_semantic, w_keyword = cosine, saturated, weights.semantic, weights.keyword
    else:
        semantic, keyword = fused.semantic, fused.keyword
        w_semantic, w_keyword = policy.relevance_weights()
    recency = decay(1.0, _age_days(now, item.valid_from), policy.recency_half_life_days)
    last_touch = item.last_accessed_at or item.valid_from
    salience = decay(item.salience, _age_days(now, last_touch), policy.half_lives.get(item.type))
    project_match = 1.0 if project_id is not None and item.project_id == project_id else 0.0
    covered = coverage(item.keyword_rank, item.keyword_ideal)
    keyword_evidence = query_keyword(item.keyword_rank, policy.keyword_saturation)
    components = {
        "semantic": semantic,
        "keyword": keyword,
        "bm25": item.keyword_rank,
        "recency": recency,
        "salience": salience,
        "importance": item.importance,
        "confidence": item.confidence,
        "type_prior": policy.type_priors.get(item.type, 0.0),
        "project_match": project_match,
        "pinned_bonus": 1.0 if item.protected else 0.0,
        "privacy_penalty": 1.0 if item.privacy == Privacy.PRIVATE else 0.0,
        "neighbour": neighbour,
        # What the relevance is made of: max(cosine, bm25 / (bm25 + saturation)); and the coverage, what
        # two memories' similarity compares (app.memory.similarity).
        "cosine": cosine,
        "coverage": covered,
    }
    total = (
        w_semantic * semantic
        + w_keyword * keyword
        + weights.recency * recency
        + weights.salience * salience
        + weights.importance * item.importance
        + weights.confidence * item.confidence
        + components["type_prior"]
        + weights.project_match * project_match
        + weights.pinned_bonus * components["pinned_bonus"]
        - weights.privacy_penalty * components["privacy_penalty"]
        + policy.neighbour_weight * neighbour
    )
    relevance = similarity(cosine, keyword_evidence)
    return Scored(score=round(total, 6), relevance=round(relevance, 6), components=components)
