"""The date a deadline memory expires after, read from its text relative to when it was observed."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from app.memory.deadlines import deadline_date, deadline_expiry

MONDAY = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Submit the grant report by 2026-12-05", date(2026, 12, 5)),
        ("Release freeze 2026-12-05T17:00 sharp", date(2026, 12, 5)),
        ("The invoice is due Dec 5", date(2026, 12, 5)),
        ("The invoice is due Dec. 5th", date(2026, 12, 5)),
        ("Taxes are due December 5, 2026", date(2026, 12, 5)),
        ("Taxes are due 5 December 2026", date(2026, 12, 5)),
        ("Ship it by the 1st of March", date(2027, 3, 1)),
        ("Migration must be done by March 2027", date(2027, 3, 31)),
        ("Quarterly report is due on Friday", date(2026, 12, 4)),
        ("Retro is this Monday", date(2026, 11, 30)),
        ("Retro moved to next Monday", date(2026, 12, 7)),
        ("Call the bank tomorrow", date(2026, 12, 1)),
        ("Pay rent today", date(2026, 11, 30)),
        ("Send the draft in 2 weeks", date(2026, 12, 14)),
        ("Renew the domain in 10 days", date(2026, 12, 10)),
    ],
)
def test_deadline_dates_are_read_in_common_forms(text: str, expected: date) -> None:
    assert deadline_date(text, MONDAY) == expected


def test_a_date_without_year_that_has_passed_this_year_means_next_year() -> None:
    assert deadline_date("Book flights by Jan 3", MONDAY) == date(2027, 1, 3)
    assert deadline_date("Book flights by Nov 30", MONDAY) == date(2026, 11, 30)


def test_the_latest_of_several_dates_counts() -> None:
    text = "Draft due 2026-12-05, final version due Dec 20"
    assert deadline_date(text, MONDAY) == date(2026, 12, 20)


@pytest.mark.parametrize(
    "text",
    [
        "Finish the migration soon",
        "Due 12/05/2026",  # day-first or month-first: ambiguous, so ignored
        "We may 3D-print the case",  # the verb, not the month
        "Feb 30 is not a day",
        "Version 2026-13-45 of the spec",
    ],
)
def test_no_date_means_no_expiry(text: str) -> None:
    assert deadline_date(text, MONDAY) is None
    assert deadline_expiry(text, MONDAY) is None


def test_a_deadline_expires_when_its_day_is_over() -> None:
    assert deadline_expiry("Submit by 2026-12-05", MONDAY) == datetime(2026, 12, 6, tzinfo=UTC)


def test_weekdays_are_relative_to_the_observed_time_not_today() -> None:
    observed = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)  # a Monday, long ago
    assert deadline_date("due Friday", observed) == date(2025, 1, 10)
