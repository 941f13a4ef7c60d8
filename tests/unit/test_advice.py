"""Which questions ask for advice or a plan (app.language.advice): only those get the user's constraints
below the relevance floor."""

from __future__ import annotations

import pytest

from app.language.advice import asks_for_advice


@pytest.mark.parametrize(
    "query",
    [
        "suggest a dinner dish",
        "What should I cook tonight?",
        "Plan my weekend in Lisbon",
        "Any ideas for lunch?",
        "Can you recommend a restaurant?",
        "help me choose a gift for my sister",
        "what to cook for six people",
    ],
)
def test_a_request_for_advice_or_a_plan(query: str) -> None:
    assert asks_for_advice(query)


@pytest.mark.parametrize(
    "query",
    ["What is my cat's name?", "Which gym am I a member of?", "Where do I live?", "When did we move?"],
)
def test_a_question_for_a_fact_is_not_advice(query: str) -> None:
    assert not asks_for_advice(query)
