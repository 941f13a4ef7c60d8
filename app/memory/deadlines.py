"""When a `deadline` memory stops mattering: the latest date written in it (a pure function).

Understood forms: ISO dates ("2026-12-05", "2026-12-05T17:00"), month names with or without a
year ("Dec 5", "December 5th, 2026", "5 December 2026", "March 2026" = the end of March), weekdays
relative to when the memory was observed ("Friday", "next Friday"), "today", "tonight", "tomorrow"
and "in 3 days" / "in 2 weeks". All-numeric forms such as 05/12/2026 are ignored: day-first and
month-first readings disagree, and a wrong expiry hides a memory that still matters.
A date without a year is the next such date on or after the observed day. The memory expires when
its (latest) day is over, at midnight UTC.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, time, timedelta

_MONTHS = {
    name: number
    for number in range(1, 13)
    for name in (calendar.month_name[number].lower(), calendar.month_abbr[number].lower())
}
_MONTHS["sept"] = 9
_WEEKDAYS = {calendar.day_name[number].lower(): number for number in range(7)}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"

_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?![\d-])")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s+{_YEAR}\b", re.IGNORECASE)
_WEEKDAY = re.compile(r"\b(?:(next|this)\s+)?(" + "|".join(_WEEKDAYS) + r")\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(today|tonight|tomorrow)\b", re.IGNORECASE)
_IN_N = re.compile(r"\bin\s+(\d{1,3})\s+(day|days|week|weeks)\b", re.IGNORECASE)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month(word: str) -> int | None:
    """The month a word names; a lower-case "may" is the verb ("we may 3D-print it"), not May."""
    return None if word == "may" else _MONTHS[word.lower()]


def _next_on_or_after(month: int, day: int, today: date) -> date | None:
    """The first `month`/`day` on or after `today` (Feb 29 waits for a leap year, at most 8 years)."""
    for year in range(today.year, today.year + 9):
        found = _safe_date(year, month, day)
        if found is not None and found >= today:
            return found
    return None


def _named_dates(text: str, today: date) -> list[date | None]:
    found: list[date | None] = []
    taken: list[tuple[int, int]] = []
    for pattern, month_group, day_group in ((_MONTH_DAY, 1, 2), (_DAY_MONTH, 2, 1)):
        for match in pattern.finditer(text):
            month = _month(match.group(month_group))
            if month is None:
                continue
            day = int(match.group(day_group))
            year = match.group(3)
            found.append(_safe_date(int(year), month, day) if year else _next_on_or_after(month, day, today))
            taken.append(match.span())
    for match in _MONTH_YEAR.finditer(text):
        start, end = match.span()
        if any(start < t_end and t_start < end for t_start, t_end in taken):
            continue  # "5 December 2026" is the 5th, not the whole month
        year, month = int(match.group(2)), _month(match.group(1))
        if month is None:
            continue
        found.append(_safe_date(year, month, calendar.monthrange(year, month)[1]))
    return found


def _relative_dates(text: str, today: date) -> list[date | None]:
    found: list[date | None] = []
    for match in _WEEKDAY.finditer(text):
        ahead = (_WEEKDAYS[match.group(2).lower()] - today.weekday()) % 7
        if (match.group(1) or "").lower() == "next" and ahead == 0:
            ahead = 7
        found.append(today + timedelta(days=ahead))
    found += [
        today + timedelta(days=1 if m.group(1).lower() == "tomorrow" else 0) for m in _RELATIVE.finditer(text)
    ]
    for match in _IN_N.finditer(text):
        count = int(match.group(1))
        found.append(today + timedelta(days=count * (7 if match.group(2).lower().startswith("week") else 1)))
    return found


def deadline_date(text: str, observed_at: datetime) -> date | None:
    """The latest date the text names (see the module docstring for the forms), or None."""
    today = observed_at.astimezone(UTC).date()
    found = [_safe_date(int(y), int(m), int(d)) for y, m, d in _ISO.findall(text)]
    found += _named_dates(text, today)
    found += _relative_dates(text, today)
    dates = [d for d in found if d is not None and 1970 <= d.year < 2200]
    return max(dates) if dates else None


def deadline_expiry(text: str, observed_at: datetime) -> datetime | None:
    """When a deadline memory expires: the end of its date (midnight UTC after it); None if no date."""
    day = deadline_date(text, observed_at)
    if day is None or day.year >= 2199:
        return None
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)
