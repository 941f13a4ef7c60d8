"""Packing is pure: slot veto, dedupe, floor, and a budget that holds for the exact rendered string."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app.lib.tokens import TokenCounter
from app.memory.lines import (
    content_tokens,
    dated_prefix,
    day_header,
    label,
    line_body,
    line_prefix,
    render_line,
)
from app.memory.packing import PackItem, SkipReason, pack

COUNTER = TokenCounter()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Line:
    type: str
    subject: str | None
    content: str
    valid_from: datetime


def item(
    ref: str,
    line: str,
    score: float,
    *,
    relevance: float = 1.0,
    always: bool = False,
    slot: tuple[str, str] | None = None,
    digest: str | None = None,
    age_days: int = 0,
) -> PackItem[str]:
    return PackItem(
        ref=ref,
        line=line,
        score=score,
        relevance=relevance,
        always=always,
        slot=slot,
        content_hash=digest or ref,
        valid_from=T0 - timedelta(days=age_days),
    )


def test_budget_holds_for_every_budget_from_8_to_4096() -> None:
    rng = random.Random(3)
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dogs",
        "while",
        "42",
        "engineers",
        "debug",
        "kubernetes",
        "at",
        "3am",
    ]
    items = [
        item(f"m{i}", "- " + " ".join(rng.choice(words) for _ in range(rng.randint(1, 120))), rng.random())
        for i in range(40)
    ]
    for budget in range(8, 4097):
        packed = pack(items, budget=budget, min_relevance=0.0, count_tokens=COUNTER.count)
        assert packed.tokens_used == COUNTER.count(packed.context)
        assert packed.tokens_used <= budget, budget


def test_newest_memory_wins_its_slot_regardless_of_score() -> None:
    old = item("old", "- I live in Lisbon", 0.9, slot=("home city", "identity"), age_days=300)
    new = item("new", "- I live in Berlin", 0.4, slot=("home city", "identity"))
    packed = pack([old, new], budget=100, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["new"]
    assert [(s.item.ref, s.reason) for s in packed.skipped] == [("old", SkipReason.SLOT_VETO)]


def test_duplicate_content_is_included_once() -> None:
    a = item("a", "- same", 0.9, digest="h")
    b = item("b", "- same", 0.8, digest="h")
    packed = pack([a, b], budget=100, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["a"]
    assert packed.skipped[0].reason is SkipReason.DUPLICATE


def test_below_floor_is_skipped_but_pinned_is_exempt() -> None:
    weak = item("weak", "- unrelated", 0.9, relevance=0.01)
    pinned = item("pinned", "- always answer in French", 0.1, relevance=0.0, always=True)
    packed = pack([weak, pinned], budget=100, min_relevance=0.2, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["pinned"]
    assert packed.skipped[0].reason is SkipReason.BELOW_FLOOR


def test_pinned_goes_first_but_never_past_the_budget() -> None:
    long_pinned = item("p", "- " + "very long pinned rule " * 50, 0.1, always=True)
    short = item("s", "- short fact", 0.9)
    packed = pack([short, long_pinned], budget=20, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["s"]
    assert ("p", SkipReason.BUDGET) in [(s.item.ref, s.reason) for s in packed.skipped]
    roomy = pack([short, long_pinned], budget=2000, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [i.item.ref for i in roomy.included] == ["p", "s"]


def test_standing_memories_below_the_floor_take_at_most_their_share_of_the_budget() -> None:
    # Three unrelated standing instructions and the question's evidence: only what fits a quarter of
    # the budget may enter whatever the question; the evidence keeps the rest.
    rules = [
        item(f"r{i}", f"- Always format every answer as rule {i} says, with headers", 0.5, relevance=0.0)
        for i in range(3)
    ]
    rules = [PackItem(**{**_fields(r), "always": True}) for r in rules]
    evidence = item("e", "- The support group meets on Tuesdays at the library", 0.4, relevance=0.6)
    packed = pack([*rules, evidence], budget=64, min_relevance=0.2, count_tokens=COUNTER.count)
    standing = [i for i in packed.included if i.item.always]
    assert sum(i.tokens for i in standing) + len(standing) - 1 <= 64 // 4
    assert len(standing) == 1
    assert [i.item.ref for i in packed.included][-1] == "e"
    assert {(s.item.ref, s.reason) for s in packed.skipped} == {
        ("r1", SkipReason.BUDGET),
        ("r2", SkipReason.BUDGET),
    }
    none = pack(
        [*rules, evidence], budget=64, min_relevance=0.2, count_tokens=COUNTER.count, standing_share=0
    )
    assert [i.item.ref for i in none.included] == ["e"]


def test_a_constraint_reaches_a_question_that_does_not_name_it_but_not_past_its_share() -> None:
    diet = item("diet", "- I am strictly vegetarian", 0.3, relevance=0.05)
    diet = PackItem(**{**_fields(diet), "standing": True})
    unrelated = item("u", "- I am a fan of the Lakers", 0.9, relevance=0.05)
    dish = pack([unrelated, diet], budget=256, min_relevance=0.2, count_tokens=COUNTER.count)
    assert [i.item.ref for i in dish.included] == ["diet"]
    assert ("u", SkipReason.BELOW_FLOOR) in [(s.item.ref, s.reason) for s in dish.skipped]
    tiny = pack([diet], budget=8, min_relevance=0.2, count_tokens=COUNTER.count)
    assert tiny.included == []


def _standing(ref: str, line: str, score: float, *, relevance: float, conditional: bool) -> PackItem[str]:
    base = item(ref, line, score, relevance=relevance, always=True)
    return PackItem(**{**_fields(base), "conditional": conditional})


def test_a_rule_that_says_when_it_applies_takes_no_room_from_a_question_it_does_not_concern() -> None:
    # "...when I ask about meetings" shares nothing with a scholarship question: no part of the share is
    # open to it. An unconditional rule, as unrelated, still enters within the share.
    meetings = _standing(
        "meetings",
        "- Always give exact times when I ask about meetings",
        0.9,
        relevance=0.0,
        conditional=True,
    )
    french = _standing("french", "- Always answer in French", 0.5, relevance=0.0, conditional=False)
    evidence = item("e", "- The scholarship deadline is May 15", 0.4, relevance=0.8)
    packed = pack([meetings, french, evidence], budget=128, min_relevance=0.2, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["french", "e"]
    assert ("meetings", SkipReason.BUDGET) in [(s.item.ref, s.reason) for s in packed.skipped]


def test_a_conditional_rule_below_the_floor_may_use_its_relevances_fraction_of_the_share() -> None:
    line = "- Always confirm time zones when I ask about interviews"
    tokens = COUNTER.count(line)
    budget, floor = 128, 0.2
    share = budget // 4
    assert tokens < share  # the whole share would hold it
    # Open to it: share * relevance / floor tokens. Just under its size it stays out, just over it enters.
    under = floor * (tokens - 0.5) / share
    over = floor * (tokens + 0.5) / share
    for relevance, enters in ((under, False), (over, True), (floor, True)):
        rule = _standing("tz", line, 0.9, relevance=relevance, conditional=True)
        packed = pack([rule], budget=budget, min_relevance=floor, count_tokens=COUNTER.count)
        assert bool(packed.included) is enters, relevance


def test_standing_memories_enter_their_share_most_relevant_first() -> None:
    # Room for one: the rule about the question's topic, not the one with the higher score.
    dates = _standing(
        "dates",
        "- Always write dates as day month year in every answer",
        0.5,
        relevance=0.15,
        conditional=False,
    )
    currency = _standing(
        "currency",
        "- Always name the currency of every amount in each answer",
        0.9,
        relevance=0.02,
        conditional=False,
    )
    one = COUNTER.count(dates.line)
    assert one <= 64 // 4 < one + 1 + COUNTER.count(currency.line)
    packed = pack([currency, dates], budget=64, min_relevance=0.2, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["dates"]


def test_a_relevant_standing_memory_past_the_share_competes_on_score() -> None:
    rule = item("rule", "- Never deploy on Fridays, not even a hotfix, without the on-call lead", 0.9)
    rule = PackItem(**{**_fields(rule), "always": True})
    other = item("o", "- Deploys go through the staging cluster first", 0.5)
    packed = pack([other, rule], budget=40, min_relevance=0.2, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["rule", "o"]


def _fields(p: PackItem[str]) -> dict[str, object]:
    return {name: getattr(p, name) for name in PackItem.__dataclass_fields__}


def test_a_smaller_item_still_fills_the_space_a_larger_one_could_not() -> None:
    big = item("big", "- " + "word " * 80, 0.9)
    small = item("small", "- tiny", 0.5)
    packed = pack([big, small], budget=30, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["small"]


def test_a_critical_rule_keeps_its_slot_against_a_newer_unapproved_memory() -> None:
    rule = item(
        "rule",
        "- Never deploy on Fridays",
        0.5,
        always=True,
        slot=("deploy days", "critical_rule"),
        age_days=30,
    )
    newer = item("newer", "- Deploy any day", 0.9, slot=("deploy days", "critical_rule"))
    packed = pack([newer, rule], budget=100, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["rule"]
    assert [(s.item.ref, s.reason) for s in packed.skipped] == [("newer", SkipReason.SLOT_VETO)]


def _random_text(rng: random.Random) -> str:
    pieces = [
        "kafka", "Lisbon's", "don't", "42", "3.14159", "2026-11-30", "----------", "/****", "(note)",
        "e-mail", "a1-b1-c1", "naïve", "東京", "😀😀", "👩‍💻", "x", "!!!", "...", "'s", "\t", "\n", "  ",
        "https://example.com/a?b=c", "snake_case_name", "CamelCaseWord", "1234567890", "über-cool",
    ]  # fmt: skip
    return rng.choice(["", " ", "- [2026-11-30 fact] "]) + "".join(
        rng.choice(pieces) + rng.choice(["", " ", " ", "  ", "\n"]) for _ in range(rng.randint(0, 40))
    )


def test_the_word_count_never_exceeds_the_token_count() -> None:
    rng = random.Random(11)
    for _ in range(3000):
        text = _random_text(rng)
        assert TokenCounter.at_least(text) <= COUNTER.count(text), text


def test_skipping_lines_by_the_lower_bound_packs_exactly_the_same() -> None:
    rng = random.Random(5)
    items = [item(f"m{i}", "- " + " ".join(_random_text(rng).split()), rng.random()) for i in range(60)]
    pruned_any = False
    for budget in range(1, 600, 7):
        calls: list[str] = []

        def counting(text: str, calls: list[str] = calls) -> int:
            calls.append(text)
            return COUNTER.count(text)

        plain = pack(items, budget=budget, min_relevance=0.0, count_tokens=COUNTER.count)
        bounded = pack(
            items, budget=budget, min_relevance=0.0, count_tokens=counting, at_least=COUNTER.at_least
        )
        assert bounded.context == plain.context
        assert bounded.tokens_used == plain.tokens_used
        assert [(i.item.ref, i.tokens) for i in bounded.included] == [
            (i.item.ref, i.tokens) for i in plain.included
        ]
        assert [(s.item.ref, s.reason) for s in bounded.skipped] == [
            (s.item.ref, s.reason) for s in plain.skipped
        ]
        pruned_any = pruned_any or len(calls) < len(items) + 2
    assert pruned_any


def test_a_line_counts_as_its_prefix_plus_its_body() -> None:
    # What lets recall store a memory's body count (memories.content_tokens) and add its prefix's.
    rng = random.Random(17)
    subjects = [None, "frontend framework", "c++", "naïve (v2)", "東京", "x.", "it's", "🙂", "a-b"]
    for _ in range(2000):
        memory = _Line(
            type=rng.choice(["fact", "episodic", "critical_rule", "preference"]),
            subject=rng.choice(subjects),
            content=_random_text(rng) or "x",
            valid_from=T0 + timedelta(days=rng.randint(0, 4000)),
        )
        line = render_line(memory)
        assert COUNTER.count(dated_prefix(memory)) + content_tokens(memory.content) == COUNTER.count(line), (
            line
        )
        grouped = line_prefix(memory) + line_body(memory.content)  # under its day's header
        assert COUNTER.count(line_prefix(memory)) + content_tokens(memory.content) == COUNTER.count(
            grouped
        ), grouped


def test_a_day_header_is_shown_once_and_paid_for_once() -> None:
    def dated(ref: str, line: str, score: float, day: int) -> PackItem[str]:
        return PackItem(**{**_fields(item(ref, line, score)), "header": f"{day} Jan 2026"})

    items = [dated("a", "- first on day one", 0.9, 1), dated("b", "- on day two", 0.8, 2),
             dated("c", "- second on day one", 0.7, 1)]  # fmt: skip
    packed = pack(items, budget=100, min_relevance=0.0, count_tokens=COUNTER.count)
    assert packed.context == "1 Jan 2026\n- first on day one\n- second on day one\n2 Jan 2026\n- on day two"
    assert [i.item.ref for i in packed.included] == ["a", "c", "b"]  # context order: the i-th line
    assert packed.tokens_used == COUNTER.count(packed.context)
    for budget in range(1, 40):
        tight = pack(items, budget=budget, min_relevance=0.0, count_tokens=COUNTER.count)
        assert tight.tokens_used == COUNTER.count(tight.context) <= budget
        lines = tight.context.splitlines()
        assert all(line.startswith("- ") or line.endswith("Jan 2026") for line in lines)
        assert not lines or lines[-1].startswith("- ")  # never a header without its lines


def test_a_label_shows_only_what_adds_meaning() -> None:
    def line(mtype: str, subject: str | None, content: str) -> _Line:
        return _Line(mtype, subject, content, T0)

    assert label(line("episodic", None, "user: I went to a support group")) is None
    assert label(line("fact", "home city", "I live in Porto (home city).")) is None
    assert label(line("fact", "standup time", "Standup is at 9:30")) == "standup time"
    assert (
        label(line("critical_rule", "deploy days", "Never deploy on Fridays")) == "critical_rule: deploy days"
    )
    assert label(line("constraint", "diet", "I am strictly vegetarian (diet).")) == "constraint"
    assert line_prefix(line("episodic", None, "x")) == "-"
    assert day_header(line("fact", None, "x")) == "1 Jan 2026"
    assert render_line(line("decision", "frontend framework", "We use Next.js for the frontend")) == (
        "- [2026-01-01 decision: frontend framework] We use Next.js for the frontend"
    )
