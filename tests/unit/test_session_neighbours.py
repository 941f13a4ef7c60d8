"""A candidate's neighbour component: the best relevance share among the candidates of its user and
session observed just before or just after it (every memory of that instant: a message split into
several memories, or the facts drawn from one message), and nothing from another session or user."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from app.lib.ranking import Fusion, RankingPolicy
from app.lib.settings import ScoringWeights
from app.lib.tokens import TokenCounter, content_tokens
from app.memory.candidate_set import Candidates
from app.memory.models import RecallInput
from app.memory.slots import content_hash
from app.store.candidates import CandidateRow
from app.vocabulary import MemoryStatus, MemoryType, Privacy

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _at(minute: int) -> datetime:
    return T0 + timedelta(minutes=minute)


def _row(
    content: str,
    minute: int,
    cosine: float,
    *,
    session: str | None = "s1",
    user: str = "u",
    prev: int | None = None,
    following: int | None = None,
) -> CandidateRow:
    return CandidateRow(
        uuid.uuid4(), MemoryType.EPISODIC, None, content, MemoryStatus.ACTIVE, 0.5, 0.5, 0.8, Privacy.PUBLIC,
        None, _at(minute), None, content_hash(content), content_tokens(content), cosine, 0.0,
        {"user_id": user, "session_id": session, "valid_to": None},  # type: ignore[arg-type]
        prev_at=None if prev is None else _at(prev), next_at=None if following is None else _at(following),
    )  # fmt: skip


def _neighbour(rows: list[CandidateRow], weight: float = 0.15) -> dict[str, float]:
    policy = RankingPolicy(weights=ScoringWeights(), fusion=Fusion.NORMALISED, neighbour_weight=weight)
    candidates = Candidates(RecallInput(user_id="u", query="which city"), policy, TokenCounter(), _at(60))
    candidates.add(rows)
    items = candidates.items()
    return {i.ref.content: candidates.components[i.ref.id]["neighbour"] for i in items}


def test_the_best_of_the_instants_before_and_after_in_the_same_users_session() -> None:
    rows = [
        _row("asked which city", 0, 0.8, following=1),
        _row("answer, first part", 1, 0.1, prev=0, following=2),
        _row("answer, second part", 1, 0.3, prev=0, following=2),  # the same message, split
        _row("thanks", 2, 0.05, prev=1),
        _row("another session at the same minute", 1, 0.9, session="s2"),  # alone in its session
        _row("another user's session s1", 0, 0.95, user="v", following=1),
        _row("no session", 0, 0.9, session=None),
    ]
    found = _neighbour(rows)
    # Under `normalised` with no keyword match, a share is 0.35 * cosine / 0.70 = cosine / 2.
    assert found["answer, first part"] == pytest.approx(0.8 / 2)
    assert found["answer, second part"] == pytest.approx(0.8 / 2)
    assert found["asked which city"] == pytest.approx(0.3 / 2)  # the better part of the message after it
    assert found["thanks"] == pytest.approx(0.3 / 2)
    assert found["another session at the same minute"] == 0.0
    assert found["no session"] == 0.0
    # The other user's memory at minute 0 is not u's answer's neighbour, nor is u's answer its.
    assert found["another user's session s1"] == 0.0


def test_a_neighbour_adds_its_weight_times_the_share_to_the_score() -> None:
    rows = [_row("asked which city", 0, 0.8, following=1), _row("the answer", 1, 0.1, prev=0)]
    scores = {}
    for weight in (0.15, 0.0):
        policy = RankingPolicy(weights=ScoringWeights(), fusion=Fusion.NORMALISED, neighbour_weight=weight)
        candidates = Candidates(RecallInput(user_id="u", query="which city"), policy, TokenCounter(), _at(60))
        candidates.add(rows)
        scores[weight] = {i.ref.content: i.score for i in candidates.items()}
    assert scores[0.15]["the answer"] - scores[0.0]["the answer"] == pytest.approx(0.15 * 0.8 / 2, abs=2e-6)
    assert scores[0.15]["asked which city"] - scores[0.0]["asked which city"] == pytest.approx(
        0.15 * 0.1 / 2, abs=2e-6
    )
    assert _neighbour(rows, weight=0.0) == {"asked which city": 0.0, "the answer": 0.0}
