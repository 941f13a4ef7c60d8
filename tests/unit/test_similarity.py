"""The one similarity (app.memory.similarity): its parts, its pairs, and what the write path may do
with it (raise a pair into the review band, never supersede by it)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from app.memory.similarity import (
    coverage,
    forget_floor,
    ideal_bm25,
    pair_similarity,
    similar_pairs,
    similarity,
    statistics,
    text_coverage,
)
from app.memory.supersession import Action, Existing, decide_semantic
from app.store.bm25 import TextStats, idf, lexemes_of

NOW = datetime(2026, 1, 1, tzinfo=UTC)
K1, B = 1.2, 0.75


def test_coverage_is_the_share_of_an_ideal_match_clamped_to_one() -> None:
    assert coverage(0.0, 3.0) == 0.0
    assert coverage(1.5, 3.0) == 0.5
    assert coverage(4.0, 3.0) == 1.0
    assert coverage(1.0, 0.0) == 0.0


def test_similarity_is_the_higher_of_the_cosine_and_the_coverage() -> None:
    assert similarity(0.3, 0.6) == 0.6
    assert similarity(0.7, 0.2) == 0.7
    assert similarity(None, 0.4) == 0.4
    assert similarity(1.3, 0.0) == 1.0
    assert similarity(-0.2, 0.0) == 0.0


def test_a_word_the_scope_never_holds_weighs_most_in_the_ideal() -> None:
    stats = TextStats(rows=10, avg_length=5.0)
    assert ideal_bm25(["stage", "note"], {"stage": 2}, stats) == pytest.approx(idf(10, 2) + idf(10, 0))
    assert idf(10, 0) > idf(10, 2)


def test_a_memory_of_mean_length_holding_every_word_once_covers_the_text() -> None:
    stats = TextStats(rows=10, avg_length=3.0)
    memory = {"stage": 1, "server": 1, "port": 1}
    dfs = {"stage": 1, "server": 2, "port": 3}
    assert text_coverage(["stage", "server", "port"], memory, dfs, stats, k1=K1, b=B) == pytest.approx(1.0)
    half = text_coverage(["stage", "server", "note"], memory, dfs, stats, k1=K1, b=B)
    assert 0.0 < half < 1.0


def test_pair_similarity_is_symmetric_and_a_short_text_is_not_a_duplicate_of_a_long_one() -> None:
    short = {"dark": 1, "mode": 1}
    long = {"dark": 1, "mode": 1, "termin": 1, "light": 1, "browser": 1, "day": 1}
    dfs, stats = statistics([short, long])
    ab = pair_similarity(None, short, long, dfs, stats, k1=K1, b=B)
    ba = pair_similarity(None, long, short, dfs, stats, k1=K1, b=B)
    assert ab == ba
    assert ab < 0.5  # the short one is all in the long one, not the other way round


def test_similar_pairs_finds_a_pair_by_its_words_when_the_cosine_is_low() -> None:
    texts = [
        {"aisl": 1, "seat": 1, "flight": 1},
        {"aisl": 1, "seat": 1, "flight": 1},
        {"tea": 1, "morn": 1},
    ]
    vectors = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]  # the first two are orthogonal
    pairs = similar_pairs(vectors, texts, 0.8, k1=K1, b=B)
    assert [(i, j) for i, j, _ in pairs] == [(0, 1), (0, 2)]  # (0, 2) by the cosine alone
    assert pairs[0][2] > 0.9


def test_lexemes_of_reads_a_tsvector_text() -> None:
    assert lexemes_of("'dark':2 'mode':3,7 'o''brien':1") == {"dark": 1, "mode": 2, "o'brien": 1}
    assert lexemes_of(None) == {}


def test_forget_floor_lies_between_recall_floor_and_review_band() -> None:
    assert forget_floor(0.25, 0.80) == pytest.approx(0.525)


def _existing(protected: bool = False) -> Existing:
    return Existing(uuid.uuid4(), "h", protected, NOW)


def test_word_overlap_raises_a_pair_into_the_review_band_but_never_supersedes() -> None:
    nearest = _existing()
    similar = _existing()
    lexical = decide_semantic(
        NOW, nearest, 0.5, supersede_at=0.92, review_at=0.80, similar=similar, similarity=0.99
    )
    assert (lexical.action, lexical.target, lexical.similarity) == (Action.PROPOSE, similar.id, 0.99)
    below = decide_semantic(
        NOW, nearest, 0.5, supersede_at=0.92, review_at=0.80, similar=similar, similarity=0.7
    )
    assert below.action is Action.CREATE


def test_the_cosine_still_decides_supersession_and_its_review_band() -> None:
    nearest, similar = _existing(), _existing()
    supersede = decide_semantic(
        NOW, nearest, 0.95, supersede_at=0.92, review_at=0.80, similar=similar, similarity=0.99
    )
    assert (supersede.action, supersede.target) == (Action.SUPERSEDE, nearest.id)
    review = decide_semantic(
        NOW, nearest, 0.85, supersede_at=0.92, review_at=0.80, similar=similar, similarity=0.99
    )
    assert (review.action, review.target) == (Action.PROPOSE, nearest.id)


def test_a_question_s_keyword_evidence_is_its_saturated_bm25() -> None:
    from app.memory.similarity import query_keyword

    assert query_keyword(4.0, 2.0) == pytest.approx(4.0 / 6.0)
    assert query_keyword(0.0, 2.0) == 0.0
