"""Slot inference for subject-less writes (`app.memory.inferred`): pure rules, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.memory.inferred import lapse_time, mentions, own_words, read

DAY = timedelta(days=1)
WEDNESDAY = datetime(2025, 3, 5, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("content", "subject"),
    [
        ("I live in Porto.", "home city"),
        ("user: I moved to Lisbon last month.", "home city"),
        ("I now work at Stripe.", "employer"),
        ("My favourite drink is green tea now.", "drink"),
        ("I switched my editor to Helix.", "editor"),
        ("Actually, I prefer light mode now.", "theme"),
        ("I'm vegan.", "diet"),
        ("My budget is 30 dollars.", "budget"),
        ("My car is a Mazda 3 now.", "car"),
        ("My brother lives in Madrid.", "brother home city"),
        ("In this project we use PostgreSQL.", "database"),
    ],
)
def test_a_single_first_person_statement_names_its_slot(content: str, subject: str) -> None:
    reading = read(content)
    assert reading is not None
    assert reading.subject == subject


def test_diet_and_budget_never_share_a_slot() -> None:
    vegan, budget = read("I am vegan"), read("my budget is 30 dollars")
    assert vegan is not None
    assert budget is not None
    assert vegan.subject != budget.subject


@pytest.mark.parametrize(
    "content",
    [
        "Caroline: I live in Boston.",  # another speaker's words are about them
        "assistant: I live in the cloud.",
        "I love hiking with my dog.",  # the object of a like is not an attribute
        "I hate not being on the court.",
        "I live in Porto. I moved here for work and I love it.",  # several statements, no one value
        "Which city do I live in?",
        "Thanks, that helps!",
        "I watched a documentary about octopuses last night.",
        "Forget my home city.",
        "I live in Porto" + ", which I love" * 40 + ".",  # longer than any one statement
        "The staging database runs on a small instance",  # a thing described, not the user's own
    ],
)
def test_no_slot_is_inferred_without_a_single_trusted_statement(content: str) -> None:
    reading = read(content)
    assert reading is None or (reading.subject is None and reading.replaces is None)


def test_a_correction_without_a_slot_names_the_value_it_replaces() -> None:
    reading = read("user: Actually, it's Lisbon, not Porto.")
    assert reading is not None
    assert (reading.subject, reading.replaces) == (None, "Porto")


def test_a_statement_bounded_in_time_lapses() -> None:
    today = read("user: Temporary: I'm working from the library today.")
    week = read("I'm in Kyoto this week for a conference.")
    home = read("I live in Porto.")
    assert today is not None
    assert week is not None
    assert home is not None
    assert (today.lapses, today.lapse_hint) == (True, "today")
    assert (week.lapses, week.lapse_hint) == (True, "this week")
    assert not home.lapses


def test_own_words_keeps_labels_and_the_user_role_only() -> None:
    assert own_words("user: I live in Porto.") == "I live in Porto."
    assert own_words("Temporary: at home today.") == "Temporary: at home today."
    assert own_words("I live in Porto.") == "I live in Porto."
    assert own_words("Melanie: I live in Paris.") is None


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        ("today", datetime(2025, 3, 6, tzinfo=UTC)),
        ("tonight", datetime(2025, 3, 6, tzinfo=UTC)),
        ("tomorrow", datetime(2025, 3, 7, tzinfo=UTC)),
        ("this week", datetime(2025, 3, 10, tzinfo=UTC)),
        ("this weekend", datetime(2025, 3, 10, tzinfo=UTC)),
        ("this month", datetime(2025, 4, 1, tzinfo=UTC)),
        ("this afternoon", datetime(2025, 3, 6, tzinfo=UTC)),
        ("for the next 3 days", WEDNESDAY + 3 * DAY),
        ("Friday", datetime(2025, 3, 8, tzinfo=UTC)),
        ("for now", WEDNESDAY + DAY),
        (None, WEDNESDAY + DAY),
    ],
)
def test_lapse_time_ends_the_bound_the_statement_names(hint: str | None, expected: datetime) -> None:
    assert lapse_time(hint, WEDNESDAY, DAY) == expected


def test_mentions_matches_whole_words_only() -> None:
    assert mentions("My favourite language is Go.", "go")
    assert not mentions("I go to Gothenburg.", "Goth")
