"""Slots for memories written without one, read from the content with high-precision rules.

A conversation turn stored as it is ("I live in Porto.") has no subject, so no slot, and its later
change ("I live in Lisbon now.") could never supersede it: both would stay current and recall would
hand back the old value beside the new. When a write carries no subject (or a generic one, which is no
slot either), the write path reads the content with the offline analyser (`app.language.analysis`)
and takes what it finds only when:

- the content is the user's own words: no speaker label, or `user:` / `human:` / `me:`. A line another
  speaker said ("Caroline: I live in Boston", "assistant: ...") is not about the user;
- it is one statement: exactly one fact, no question, no forget request. A slot holds one value, and a
  message that says several things is not the value of any one attribute;
- the slot is a well-known attribute (home city, employer, diet, editor: the analyser's vocabulary) or
  one the user names as theirs ("my car is ..."), never the object of a like ("I love hiking").

The memory keeps the type it was written with; its slot is (subject, type) as for any write, so "I am
vegan" (diet) never retires "my budget is 30 dollars" (budget). A correction that names the value it
replaces but no slot ("Actually, it's Lisbon, not Porto.") takes the slot of the newest live memory of
the same type and scope that has one and mentions that value (earlier items of the same batch first).
A statement bounded in time ("Temporary: working from home today", "I'm in Kyoto this week") lapses
when that time is over, as a temporary memory does, unless the write gave its own expiry or is a
`temporary` memory (which has its own lifetime rule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

from app.language.analysis import analyse
from app.language.rules import LABEL_PREFIX
from app.memory.deadlines import deadline_expiry
from app.memory.intake import item_scope
from app.memory.models import RememberInput
from app.memory.slots import normalise_subject
from app.store.writes import WriteStore
from app.tenancy.types import TenantId
from app.vocabulary import MemoryType, Scope

TRUSTED_BASES = frozenset({"vocabulary", "named"})
# Longer than any one statement: such a write is never read (the analyser costs ~0.5 ms per 2,000 chars).
MAX_STATEMENT_CHARS = 400
USER_LABELS = frozenset({"user", "human", "me"})
_SPEAKER = re.compile(r"^\s*(?P<who>[A-Za-z][\w .'-]{0,30}?)\s*:\s+")
_NEXT_N = re.compile(
    r"for\s+the\s+next\s+(?P<n>\d+|a|an|one|two|three|four|five|six|seven)\s+(?P<unit>hour|day|week)"
)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


@dataclass(frozen=True, slots=True)
class Reading:
    """What a subject-less statement says about its own slot and lifetime."""

    subject: str | None  # the slot, normalised
    replaces: str | None  # a correction's replaced value, when it names no slot of its own
    lapses: bool  # bounded in time ("today", "this week", "Temporary:")
    lapse_hint: str | None  # the bound as written, None for an open one ("for now", "Temporary:")


def own_words(content: str) -> str | None:
    """The content as the user's own statement, or None when another speaker is named."""
    m = _SPEAKER.match(content)
    if m is None or LABEL_PREFIX.match(content.lstrip()):
        return content
    return content[m.end() :] if m["who"].strip().lower() in USER_LABELS else None


def read(content: str) -> Reading | None:
    """The slot, replaced value and lifetime one statement implies; None when it implies nothing."""
    if len(content) > MAX_STATEMENT_CHARS:
        return None
    text = own_words(content)
    if text is None:
        return None
    analysis = analyse(text)
    if len(analysis.facts) != 1 or analysis.question or analysis.forgets:
        return None
    fact = analysis.facts[0]
    trusted = fact.subject is not None and fact.subject_basis in TRUSTED_BASES
    subject = normalise_subject(fact.subject) if trusted else None
    replaces = fact.previous_value if fact.is_correction and subject is None else None
    lapses = fact.type == "temporary"
    if subject is None and replaces is None and not lapses:
        return None
    return Reading(subject, replaces, lapses, fact.expires_hint if lapses else None)


def lapse_time(hint: str | None, observed_at: datetime, default: timedelta) -> datetime:
    """When a statement bounded by `hint` stops being true (midnight UTC ends a day); `default` after
    `observed_at` when the bound names no time ("for now", "at the moment", a "Temporary:" label)."""
    day = observed_at.astimezone(UTC).date()
    text = (hint or "").lower()
    if m := _NEXT_N.search(text):
        count = int(m["n"]) if m["n"].isdigit() else _NUMBERS[m["n"]]
        return observed_at + timedelta(**{f"{m['unit']}s": count})
    if re.search(r"\bthis\s+week(?:end)?\b", text):
        return _midnight(day + timedelta(days=7 - day.weekday()))
    if re.search(r"\bthis\s+month\b", text):
        return _midnight((day.replace(day=28) + timedelta(days=4)).replace(day=1))
    if re.search(r"\bthis\s+(?:morning|afternoon|evening)\b", text):
        return _midnight(day + timedelta(days=1))
    if hint and (when := deadline_expiry(hint, observed_at)) is not None:
        return when
    return observed_at + default


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


async def infer_slots(
    writes: WriteStore,
    tenant: TenantId,
    items: Sequence[RememberInput],
    now: datetime,
    default_lapse: timedelta,
) -> list[RememberInput]:
    """`items` with the slots and lifetimes their content implies filled in where none was given."""
    out: list[RememberInput] = []
    for item in items:
        reading = read(item.content) if normalise_subject(item.subject) is None else None
        if reading is None:
            out.append(item)
            continue
        subject = reading.subject
        if subject is None and reading.replaces:
            subject = _slot_in_batch(out, item, reading.replaces) or await _slot_in_store(
                writes, item_scope(tenant, item), item.type, reading.replaces
            )
        expires_at = item.expires_at
        # A `temporary` write already lapses by the service's rule (DESIGN.md: 1 day by default).
        timed = (
            item.expires_at is not None or item.ttl_seconds is not None or item.type == MemoryType.TEMPORARY
        )
        if reading.lapses and not timed:
            expires_at = lapse_time(reading.lapse_hint, item.observed_at or now, default_lapse)
        out.append(replace(item, subject=subject or item.subject, expires_at=expires_at))
    return out


def mentions(content: str, value: str) -> bool:
    """Whether `content` names `value` as a whole word or phrase (case-insensitive)."""
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", content, re.IGNORECASE) is not None


def _slot_in_batch(earlier: Sequence[RememberInput], item: RememberInput, value: str) -> str | None:
    for other in reversed(earlier):
        same_scope = (other.user_id, other.project_id, other.type) == (
            item.user_id,
            item.project_id,
            item.type,
        )
        subject = normalise_subject(other.subject)
        if same_scope and subject is not None and mentions(other.content, value):
            return subject
    return None


async def _slot_in_store(writes: WriteStore, scope: Scope, mtype: MemoryType, value: str) -> str | None:
    for memory in await writes.slotted_mentioning(scope, mtype, value):
        if memory.subject is not None and mentions(memory.content, value):
            return memory.subject
    return None
