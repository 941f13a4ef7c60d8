"""The BM25 formula recall's SQL mirrors, and the three fusions of cosine and BM25 (pure functions)."""

from __future__ import annotations

import math

import openai
import pytest

from app.embeddings.hashing import HashEmbedder
from app.embeddings.openai_compat import OpenAICompatEmbedder
from app.lib.ranking import Fusion, RankingPolicy
from app.lib.settings import ScoringWeights, Settings
from app.memory.fusion import Relevance, cosine_range, fuse, ranks, reciprocal
from app.store.bm25 import TextStats, bm25, document_frequencies, idf, term_score


def test_idf_is_lucenes_and_never_negative() -> None:
    assert idf(100, 1) == pytest.approx(math.log(1 + 99.5 / 1.5))
    assert idf(100, 100) == pytest.approx(math.log(1 + 0.5 / 100.5))
    assert idf(10, 1) > idf(10, 5) > idf(10, 10) > 0
    assert idf(3, 5) > 0  # a remembered N older than the matches: N is taken as at least df


def test_term_score_by_hand() -> None:
    # tf 2, a row of 10 lexemes in a scope averaging 5: k1 (1 - b + b * 2) = 1.2 * 1.75 = 2.1
    assert term_score(2, 10, 5.0, 3.0, 1.2, 0.75) == pytest.approx(3.0 * 2 * 2.2 / (2 + 2.1))
    # b = 0: no length normalisation; k1 = 0: tf does not count
    assert term_score(1, 100, 5.0, 1.0, 1.2, 0.0) == term_score(1, 5, 5.0, 1.0, 1.2, 0.0)
    assert term_score(7, 5, 5.0, 2.0, 0.0, 0.75) == pytest.approx(2.0)


def test_term_frequency_saturates_and_long_rows_weigh_less() -> None:
    one, two, many = (term_score(tf, 5, 5.0, 1.0, 1.2, 0.75) for tf in (1, 2, 50))
    assert one < two < many < 1.0 * (1.2 + 1)  # bounded by idf * (k1 + 1)
    assert term_score(1, 5, 5.0, 1.0, 1.2, 0.75) > term_score(1, 50, 5.0, 1.0, 1.2, 0.75)


def test_a_rare_word_outweighs_a_common_one() -> None:
    rows = [{"support": 1}] * 8 + [{"support": 1, "zeppelin": 1}, {"zeppelin": 1}]
    dfs = document_frequencies(rows)
    assert dfs == {"support": 9, "zeppelin": 2}
    stats = TextStats(rows=20, avg_length=4.0)
    common = bm25({"support": 1}, 4, dfs, stats, k1=1.2, b=0.75)
    rare = bm25({"zeppelin": 1}, 4, dfs, stats, k1=1.2, b=0.75)
    both = bm25({"support": 1, "zeppelin": 1}, 4, dfs, stats, k1=1.2, b=0.75)
    assert rare > 2 * common
    assert both == pytest.approx(rare + common)


def test_ranks_share_ties_and_leave_unfound_rows_out() -> None:
    assert ranks([0.2, 0.9, 0.0, 0.9, 0.5]) == [4, 1, None, 1, 3]
    assert reciprocal(1, 60) == 1.0
    assert reciprocal(None, 60) == 0.0
    assert reciprocal(2, 60) == pytest.approx(61 / 62)


def test_weighted_fusion_is_the_cosine_and_the_saturated_bm25() -> None:
    fused = fuse([0.4, None, -0.2], [2.0, 6.0, 0.0], Fusion.WEIGHTED, saturation=2.0)
    assert fused == [Relevance(0.4, 0.5), Relevance(0.0, 0.75), Relevance(0.0, 0.0)]


def test_normalised_fusion_divides_by_the_querys_best_bm25() -> None:
    fused = fuse([0.4, 0.3, 0.7], [2.0, 8.0, 0.0], Fusion.NORMALISED, saturation=2.0)
    assert fused == [Relevance(0.4, 0.25), Relevance(0.3, 1.0), Relevance(0.7, 0.0)]
    # The raw scale does not matter, only the ratio to the best match.
    assert fuse([0.4], [5.0], Fusion.NORMALISED, saturation=2.0) == [Relevance(0.4, 1.0)]
    assert fuse([0.4], [0.0], Fusion.NORMALISED, saturation=2.0) == [Relevance(0.4, 0.0)]


def test_minmax_fusion_scales_both_halves_over_the_querys_candidates() -> None:
    fused = fuse([0.5, 0.25, 0.75, None], [2.0, 8.0, 0.0, 4.0], Fusion.MINMAX, saturation=2.0)
    assert fused == [
        Relevance(0.5, 0.25),
        Relevance(0.0, 1.0),
        Relevance(1.0, 0.0),
        Relevance(0.0, 0.5),  # no comparable vector: no semantic share, whatever the others' range
    ]
    # A narrow band of cosines spans the whole [0, 1], as the keyword half does: the scale of each half
    # does not matter, only where a candidate sits between the query's worst and best.
    narrow = fuse([0.41, 0.43, 0.45], [1.0, 2.0, 4.0], Fusion.MINMAX, saturation=2.0)
    assert [r.semantic for r in narrow] == pytest.approx([0.0, 0.5, 1.0])
    # One candidate, or all alike: a positive cosine is the best there is; a non-positive one counts 0.
    assert fuse([0.4], [0.0], Fusion.MINMAX, saturation=2.0) == [Relevance(1.0, 0.0)]
    assert fuse([-0.2, -0.1], [1.0, 0.0], Fusion.MINMAX, saturation=2.0) == [
        Relevance(0.0, 1.0),
        Relevance(0.0, 0.0),
    ]


def test_minmax_scales_the_cosine_from_the_embedders_floor_unless_a_candidate_is_lower() -> None:
    # Two memories about the query, a hundredth apart: from the floor (0.25, "not about the query at
    # all") they score 1 and 0.96, where from the lower of the two they would score 1 and 0.
    near = fuse([0.50, 0.49], [0.0, 0.0], Fusion.MINMAX, saturation=2.0, cosine_floor=0.25)
    assert [r.semantic for r in near] == pytest.approx([1.0, 0.96])
    apart = fuse([0.50, 0.49], [0.0, 0.0], Fusion.MINMAX, saturation=2.0)
    assert [r.semantic for r in apart] == pytest.approx([1.0, 0.0])
    # A candidate below the floor sets the bottom of the range itself.
    low = fuse([0.10, 0.30, 0.50], [0.0, 0.0, 0.0], Fusion.MINMAX, saturation=2.0, cosine_floor=0.25)
    assert [r.semantic for r in low] == pytest.approx([0.0, 0.5, 1.0])
    assert cosine_range([0.4, None, 0.6], 0.25) == (0.25, 0.6)
    assert cosine_range([0.1, 0.6], 0.25) == (0.1, 0.6)
    assert cosine_range([None], 0.25) == (0.0, 0.0)


def test_rrf_reads_only_the_order_within_each_half() -> None:
    fused = fuse([0.9, 0.1, 0.5], [0.0, 30.0, 1.0], Fusion.RRF, saturation=2.0, rrf_k=60)
    assert fused == [
        Relevance(1.0, 0.0),
        Relevance(61 / 63, 1.0),
        Relevance(61 / 62, 61 / 62),
    ]
    scaled = fuse([0.9, 0.1, 0.5], [0.0, 3000.0, 100.0], Fusion.RRF, saturation=2.0, rrf_k=60)
    assert scaled == fused


def test_the_policy_carries_bm25_and_fusion_settings() -> None:
    policy = RankingPolicy.of(
        Settings(fusion="rrf", bm25_k1=0.9, bm25_b=0.4, rrf_k=20, fused_semantic_weight=0.6),
        fusion=Fusion.MINMAX,
    )
    assert (policy.fusion, policy.bm25_k1, policy.bm25_b, policy.rrf_k) == (Fusion.RRF, 0.9, 0.4, 20)
    assert policy.relevance_weights() == (0.6, 0.35)
    weighted = RankingPolicy(weights=ScoringWeights(semantic=0.5, keyword=0.2), fusion=Fusion.WEIGHTED)
    assert weighted.relevance_weights() == (0.5, 0.2)
    # Unset, the fusion is the embedder's (docs/RANKING.md): a sentence model's cosine is min-max scaled
    # beside the keyword half, the hash embedder's (a coarser keyword match) is not.
    assert RankingPolicy.of(Settings(), fusion=Fusion.MINMAX).fusion is Fusion.MINMAX
    assert RankingPolicy.of(Settings(), fusion=Fusion.NORMALISED).fusion is Fusion.NORMALISED
    assert HashEmbedder().fusion is Fusion.NORMALISED
    api = OpenAICompatEmbedder(openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9"), "m", dim=8)
    assert api.fusion is Fusion.MINMAX
