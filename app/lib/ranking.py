"""The ranking policy: every knob of recall's scoring in one object, built once from the settings.

To change how recall ranks, change a setting (`ENGRAM_WEIGHT_*`, `ENGRAM_KEYWORD_SATURATION`, ...) or
the defaults here and in `app/lib/settings.py`; `app/memory/scoring.py` applies the policy. The
relevance floor, the supersede/review thresholds and the fusion belong to the embedder
(`Embedder.relevance_floor`, `Embedder.thresholds`, `Embedder.fusion`); a configured
`ENGRAM_MIN_RELEVANCE` or `ENGRAM_FUSION` overrides the embedder's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from app.lib.settings import ScoringWeights, Settings

# A recall that asks for a type (`prefer_type`) adds this to the score of memories of that type.
PREFER_TYPE_BONUS = 0.10


class Fusion(StrEnum):
    """How the cosine and the BM25 become score components (app.memory.fusion)."""

    WEIGHTED = "weighted"
    NORMALISED = "normalised"
    MINMAX = "minmax"
    RRF = "rrf"


@dataclass(frozen=True, slots=True)
class RankingPolicy:
    weights: ScoringWeights
    type_priors: dict[str, float] = field(default_factory=dict)
    half_lives: dict[str, float | None] = field(default_factory=dict)  # days; None: never decays
    recency_half_life_days: float = 30.0
    keyword_saturation: float = 2.0  # the BM25 at which the weighted keyword component is 0.5
    prefer_type_bonus: float = PREFER_TYPE_BONUS
    min_relevance: float | None = None  # None: the embedder's floor
    candidate_k: int = 50  # per half: top-k by cosine, top-k by keywords
    keyword_max_matches: int = 1000  # full-text matches ranked per recall (bounds broad OR queries)
    bm25_k1: float = 1.2  # term-frequency saturation
    bm25_b: float = 0.75  # length normalisation
    fusion: Fusion = Fusion.NORMALISED
    rrf_k: int = 60
    # The two relevance components' weights under `normalised` and `rrf` (`weighted` uses
    # weights.semantic and weights.keyword).
    fused_semantic_weight: float = 0.35
    fused_keyword_weight: float = 0.35
    # What a candidate's neighbours in its conversation (the memories of its session just before and after
    # it) add to its score: this times their best relevance share (app.memory.scoring). 0.15 against the
    # 0.70 its own relevance can add: a memory's own match always counts more than its neighbour's.
    neighbour_weight: float = 0.15
    # Standing memories (pinned, critical rules, constraints) enter a context whatever the question only
    # within this share of its budget (app.memory.packing); past it, on relevance like any memory.
    standing_share: float = 0.25
    # Whether a standing rule that says when it applies ("... when I ask about meetings") takes, below the
    # floor, only its relevance's fraction of that share: when the embedder finds paraphrases
    # (`Embedder.paraphrases`), so that a relevance near 0 means the question is about something else.
    conditional_rules: bool = False
    # Long memories are also stored as passages of at most this many tokens (app/memory/passages.py):
    # ranked by their best passage, packed whole or as that passage (0: no passages are written).
    passage_tokens: int = 100
    # True: pack each long memory's best passage first and show it whole with what is left; False: whole
    # when it fits the room left, else the passage.
    passages_first: bool = True

    @classmethod
    def of(cls, settings: Settings, *, fusion: Fusion, paraphrases: bool = False) -> RankingPolicy:
        """The settings' policy; `fusion` (the embedder's, `Embedder.fusion`) unless they name one;
        `paraphrases`: the embedder's (`conditional_rules`)."""
        return cls(
            weights=settings.weights,
            type_priors=dict(settings.type_priors),
            half_lives=dict(settings.half_lives),
            recency_half_life_days=settings.recency_half_life_days,
            keyword_saturation=settings.keyword_saturation,
            min_relevance=settings.min_relevance,
            candidate_k=settings.candidate_k,
            keyword_max_matches=settings.keyword_max_matches,
            bm25_k1=settings.bm25_k1,
            bm25_b=settings.bm25_b,
            fusion=Fusion(settings.fusion) if settings.fusion is not None else fusion,
            rrf_k=settings.rrf_k,
            fused_semantic_weight=settings.fused_semantic_weight,
            fused_keyword_weight=settings.fused_keyword_weight,
            standing_share=settings.standing_share,
            conditional_rules=paraphrases,
            neighbour_weight=settings.neighbour_weight,
            passage_tokens=settings.passage_tokens,
            passages_first=settings.passage_packing == "passages",
        )

    def relevance_weights(self) -> tuple[float, float]:
        """(semantic, keyword) weights of the score under this policy's fusion."""
        if self.fusion is Fusion.WEIGHTED:
            return self.weights.semantic, self.weights.keyword
        return self.fused_semantic_weight, self.fused_keyword_weight

    def floor(self, embedder_floor: float) -> float:
        """The minimum relevance a recall applies when the request names none."""
        return self.min_relevance if self.min_relevance is not None else embedder_floor
