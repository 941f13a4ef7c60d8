"""Pure scoring, decay and supersession decisions."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from app.lib.ranking import RankingPolicy
from app.lib.settings import DEFAULT_HALF_LIVES, DEFAULT_TYPE_PRIORS, ScoringWeights
from app.memory.scoring import ScoreInput, decay, keyword_score, score
from app.memory.slots import content_hash, normalise_subject
from app.memory.supersession import Action, Existing, decide_semantic, decide_slot
from app.vocabulary import SupersedeRule

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def scored(**overrides: object) -> float:
    base: dict[str, object] = {
        "cosine": 0.5,
        "keyword_rank": 0.0,
        "type": "fact",
        "importance": 0.5,
        "confidence": 0.8,
        "salience": 1.0,
        "protected": False,
        "privacy": "public",
        "project_id": None,
        "valid_from": NOW,
        "last_accessed_at": None,
    }
    base.update(overrides)
    return score(
        ScoreInput(**base),  # type: ignore[arg-type]
        now=NOW,
        policy=RankingPolicy(
            weights=ScoringWeights(),
            half_lives=DEFAULT_HALF_LIVES,
            type_priors=DEFAULT_TYPE_PRIORS,
            recency_half_life_days=30,
            keyword_saturation=0.1,
        ),
        project_id="p",
    ).score


def test_decay_halves_at_the_half_life_and_never_decays_without_one() -> None:
    assert decay(1.0, 10, 10) == pytest.approx(0.5)
    assert decay(0.8, 20, 10) == pytest.approx(0.2)
    assert decay(0.8, 1000, None) == 0.8


def test_keyword_score_is_bounded_and_monotonic() -> None:
    assert keyword_score(0, 0.1) == 0
    assert 0 < keyword_score(0.05, 0.1) < keyword_score(0.5, 0.1) < 1


def test_each_component_moves_the_score_in_its_direction() -> None:
    plain = scored()
    assert scored(cosine=0.9) > plain
    assert scored(keyword_rank=0.3) > plain
    assert scored(importance=0.9) > plain
    assert scored(protected=True) > plain
    assert scored(project_id="p") > plain
    assert scored(privacy="private") < plain
    assert scored(valid_from=NOW - timedelta(days=365)) < plain
    assert scored(type="critical_rule") > plain


def test_preferences_do_not_fade_but_episodes_do() -> None:
    year_ago = NOW - timedelta(days=365)
    assert scored(type="preference", valid_from=year_ago) - scored(type="preference") == pytest.approx(
        scored(type="critical_rule", valid_from=year_ago) - scored(type="critical_rule")
    )
    fade_episode = scored(type="episodic") - scored(type="episodic", valid_from=year_ago)
    fade_preference = scored(type="preference") - scored(type="preference", valid_from=year_ago)
    assert fade_episode > fade_preference


def existing(*, digest: str = "h1", protected: bool = False, days_ago: int = 1) -> Existing:
    return Existing(uuid.uuid4(), digest, protected, NOW - timedelta(days=days_ago))


def test_slot_rule() -> None:
    assert decide_slot("h1", NOW, None) is None
    assert decide_slot("h1", NOW, existing()).action is Action.DEDUPLICATE
    changed = decide_slot("h2", NOW, existing())
    assert changed is not None
    assert changed.action is Action.SUPERSEDE
    assert changed.rule is SupersedeRule.EXACT_SLOT
    protected = decide_slot("h2", NOW, existing(protected=True))
    assert protected is not None
    assert protected.action is Action.PROPOSE
    late = decide_slot("h2", NOW - timedelta(days=30), existing(days_ago=1))
    assert late is not None
    assert late.action is Action.ARRIVED_STALE


@pytest.mark.parametrize(
    ("cosine", "protected", "expected"),
    [
        (None, False, Action.CREATE),
        (0.50, False, Action.CREATE),
        (0.80, False, Action.PROPOSE),
        (0.95, False, Action.SUPERSEDE),
        (0.95, True, Action.PROPOSE),
    ],
)
def test_semantic_rule(cosine: float | None, protected: bool, expected: Action) -> None:
    decision = decide_semantic(NOW, existing(protected=protected), cosine, supersede_at=0.9, review_at=0.75)
    assert decision.action is expected


def test_semantic_rule_sends_changed_numbers_to_review_even_at_high_cosine() -> None:
    decision = decide_semantic(NOW, existing(), 0.99, supersede_at=0.9, review_at=0.75, numbers_differ=True)
    assert decision.action is Action.PROPOSE


@pytest.mark.parametrize(
    ("raw", "slot"),
    [
        ("Frontend Framework", "frontend framework"),
        ("my  home_city", "home city"),
        ("The editor.", "editor"),
        ("user", None),
        ("Me", None),
        ("general", None),
        ("preferences", None),
        ("", None),
        (None, None),
    ],
)
def test_subject_normalisation_refuses_generic_subjects(raw: str | None, slot: str | None) -> None:
    assert normalise_subject(raw) == slot


def test_content_hash_ignores_case_spacing_and_trailing_punctuation() -> None:
    assert content_hash("I like  tea.") == content_hash("i like tea")
    assert content_hash("I like tea") != content_hash("I like coffee")
