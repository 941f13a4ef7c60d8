"""The past-question detector (app.language.tense): questions about what held before now, and present
questions that look like them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.language.tense import asks_about_past
from app.memory.lines import superseded_mark


@pytest.mark.parametrize(
    "question",
    [
        "what did we use before Next.js?",
        "Before Next.js, what did we build the frontend with?",
        "where did I live last March?",
        "Where was I living last year?",
        "what was my old address?",
        "What was our old CI provider?",
        "what did I use to drink in the morning?",
        "Which editor did I use to prefer?",
        "which city I used to live in?",
        "what are the things I used to eat?",
        "Previously, which database did we pick?",
        "what was my previous employer?",
        "what was my former job title?",
        "which city did I originally move to?",
        "What was the original deadline?",
        "what did I think in the past about tabs?",
        "what was the plan back then?",
        "What did we choose at first?",
        "What was my job two years ago?",
        "where did I work until 2020?",
        "What was my address before I moved to Lisbon?",
        "what did we eat when I was a kid?",
        "what did I tell you earlier about my diet?",
        "What framework did we use before that?",
        "Where did you say I lived before Porto?",
        "what\u2019s the city I used to live in?",
        "Tell me what we used before Next.js",
        "I'm hungry. What did I use to cook on Sundays?",
    ],
)
def test_a_question_about_the_past_is_recognised(question: str) -> None:
    assert asks_about_past(question)


@pytest.mark.parametrize(
    "question",
    [
        "what do we use now?",
        "which frontend framework do we use?",
        "where do I live?",
        # A way of speaking, not a time: the question is about now.
        "before I forget, where do I live?",
        "Before we start, what is my diet?",
        # "before" and "until" about the future or the present.
        "what should I do before the meeting?",
        "what do we need to finish before Friday?",
        "what can I eat until my surgery?",
        # A past verb without a time: the answer is today's fact.
        "did I tell you where I live?",
        "what was the wifi password again?",
        "Where did you say I live?",
        # "old", "last", "used to" meaning something else.
        "how old am I?",
        "How old is my dog?",
        "Is the old server still running?",
        "what is my last name?",
        "what am I used to?",
        "I'm getting used to what, exactly?",
        "What is this tool used to do?",
        "what are we used to deploying on?",
        "what is my latest address?",
        "what is the current plan?",
        "",
        # A statement about the past beside a question about now (a chat message).
        "I moved to Lisbon last month. Any dinner ideas?",
        "We used to deploy on Heroku. Where do we deploy now?",
    ],
)
def test_a_present_question_that_looks_like_one_is_not(question: str) -> None:
    assert not asks_about_past(question)


def test_a_superseded_line_says_when_and_ends_with_a_bracket() -> None:
    assert superseded_mark(datetime(2026, 11, 30, 18, 0, tzinfo=UTC)) == " (superseded 30 Nov 2026)"
    assert superseded_mark(None) == " (superseded)"
