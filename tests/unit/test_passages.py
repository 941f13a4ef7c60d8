"""Passages are pure: how a long content is cut (app/memory/passages.py), which passage ranks a memory
(app/memory/fusion.py `best_unit`), and whether the packer shows the whole memory or the passage."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime

import pytest

from app.lib.tokens import TokenCounter, line_body
from app.memory.fusion import best_unit
from app.memory.packing import Excerpt, PackItem, SkipReason, pack
from app.memory.passages import MARK, Span, excerpt, excerpt_tokens, split

COUNTER = TokenCounter()
T0 = datetime(2026, 1, 1, tzinfo=UTC)
SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank."  # 14 tokens


def words_of(content: str, spans: list[Span]) -> list[str]:
    return " ".join(content[s.start : s.end] for s in spans).split()


def test_a_content_that_fits_one_passage_has_none() -> None:
    assert split(SENTENCE, 100, COUNTER) == []
    assert split(" ".join([SENTENCE] * 7), 100, COUNTER) == []  # 98 tokens
    assert split(" ".join([SENTENCE] * 8), 0, COUNTER) == []


def test_passages_are_whole_sentences_in_order_covering_every_word_once() -> None:
    sentences = [f"Sentence number {i} talks about topic {i * 7} at some length." for i in range(40)]
    content = " ".join(sentences)
    spans = split(content, 100, COUNTER)
    assert len(spans) > 1
    assert words_of(content, spans) == content.split()
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))
    assert all(content[s.start : s.end].endswith(".") and content[s.start].isupper() for s in spans)
    assert all(t <= 100 for t in excerpt_tokens(content, spans, COUNTER.count))


def test_windows_are_even_so_no_passage_is_a_stray_tail() -> None:
    content = " ".join([SENTENCE] * 8)  # 112 tokens: two passages of 56, not 98 + 14
    spans = split(content, 100, COUNTER)
    sizes = [COUNTER.count(line_body(content[s.start : s.end])) for s in spans]
    assert sizes == [56, 56]


def test_newlines_end_sentences_too() -> None:
    lines = [f"step_{i} = run(task_{i}, retries={i})" for i in range(60)]  # code: no full stops
    content = "\n".join(lines)
    spans = split(content, 60, COUNTER)
    assert len(spans) > 1
    assert all(content[s.start : s.end].split("\n")[-1] in lines for s in spans)  # cut at line ends
    assert words_of(content, spans) == content.split()


def test_a_sentence_longer_than_a_passage_is_cut_between_words_and_a_word_between_characters() -> None:
    run_on = " ".join(f"word{i}" for i in range(200))  # one sentence of ~400 tokens
    blob = "x9" * 900  # one 1800-character word
    for content in (run_on, f"{SENTENCE} {blob} {SENTENCE}"):
        spans = split(content, 50, COUNTER)
        assert all(t <= 50 for t in excerpt_tokens(content, spans, COUNTER.count))
        assert "".join(content[s.start : s.end] for s in spans).replace(" ", "") == content.replace(" ", "")


@pytest.mark.parametrize("seed", range(20))
def test_random_text_keeps_the_bound_and_the_words(seed: int) -> None:
    rng = random.Random(seed)
    vocab = [
        "alpha",
        "Beta.",
        "gamma,",
        "δέλτα",
        "ε!",
        "naïve",
        "2024-03-15",
        "x=1;",
        "\n",
        "über?",
        "日本語",
        "(a)",
    ]
    content = " ".join(rng.choice(vocab) for _ in range(rng.randint(50, 400)))
    max_tokens = rng.choice([20, 50, 100, 128])
    spans = split(content, max_tokens, COUNTER)
    if COUNTER.count(line_body(content)) <= max_tokens:
        assert spans == []
        return
    assert words_of(content, spans) == content.split()
    assert all(t <= max_tokens for t in excerpt_tokens(content, spans, COUNTER.count))


def test_an_excerpt_marks_where_it_cuts_the_content() -> None:
    content = "  First part here. Middle\n part here.  Last part here.  "
    spans = [Span(2, 18), Span(19, 37), Span(39, 54)]
    assert [excerpt(content, s) for s in spans] == [
        " First part here." + MARK,
        " " + MARK + "Middle part here." + MARK,
        " " + MARK + "Last part here.",
    ]


def test_a_memory_ranks_by_the_passage_with_the_best_weighted_cosine_and_bm25() -> None:
    units = [(0.30, 0.0), (0.20, 4.0), (0.50, 1.0), (None, 3.0)]
    assert best_unit(units, 8.0, (0.35, 0.35)) == 1  # 0.07 + 0.175 against 0.105, 0.219 and 0.131
    assert best_unit(units, 8.0, (0.35, 0.0)) == 2  # cosine alone
    assert best_unit(units, 0.0, (0.35, 0.35)) == 2  # no keyword match anywhere
    assert best_unit([(0.4, 0.0), (0.4, 0.0)], 1.0, (0.35, 0.35)) == 0  # the first of equals
    # Under `minmax` the candidates' cosines span 0.2 (0.4 -> 0.6, say): a cosine gap counts five times as
    # much, as it does in the fused score: 0.35 * 0.32 / 0.2 = 0.56 beats 0.35 * 0.20 / 0.2 + 0.175 =
    # 0.525, where on the raw cosine 0.112 lost to 0.245.
    two = [(0.32, 0.0), (0.20, 4.0)]
    assert best_unit(two, 8.0, (0.35, 0.35), cosine_span=0.2) == 0
    assert best_unit(two, 8.0, (0.35, 0.35)) == 1


def long_item(ref: str, score: float, whole_tokens: int, excerpt_words: int) -> PackItem[str]:
    line = "-" + " word" * whole_tokens
    shown = "- " + MARK + " part" * excerpt_words + MARK
    return PackItem(
        ref=ref,
        line=line,
        score=score,
        relevance=1.0,
        always=False,
        slot=None,
        content_hash=ref,
        valid_from=T0,
        tokens=COUNTER.count(line),
        excerpt=Excerpt(2, 10, 20, COUNTER.count(shown), lambda: shown),
    )


def short_item(ref: str, score: float, n: int) -> PackItem[str]:
    line = "-" + " note" * n
    return PackItem(ref, line, score, 1.0, False, None, ref, T0, tokens=COUNTER.count(line))


def test_the_packer_takes_the_whole_memory_when_it_fits_else_its_passage() -> None:
    items = [long_item("long", 0.9, 300, 60), short_item("short", 0.5, 30)]
    roomy = pack(items, budget=1024, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [(i.item.ref, i.excerpt) for i in roomy.included] == [("long", None), ("short", None)]
    tight = pack(items, budget=128, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [(i.item.ref, i.excerpt is not None) for i in tight.included] == [("long", True), ("short", False)]
    assert tight.context.splitlines()[0] == items[0].excerpt.line  # type: ignore[union-attr]
    assert tight.tokens_used == COUNTER.count(tight.context) <= 128
    assert tight.included[0].tokens == COUNTER.count(tight.context.splitlines()[0])


def test_a_passage_that_does_not_fit_either_is_skipped_for_the_budget() -> None:
    items = [long_item("long", 0.9, 300, 60), short_item("short", 0.5, 30)]
    packed = pack(items, budget=50, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [i.item.ref for i in packed.included] == ["short"]
    assert [(s.item.ref, s.reason) for s in packed.skipped] == [("long", SkipReason.BUDGET)]


def test_passages_first_gives_the_budget_to_more_memories_and_widens_with_what_is_left() -> None:
    items = [long_item("long", 0.9, 300, 60), short_item("short", 0.5, 30)]
    first = pack(items, budget=320, min_relevance=0.0, count_tokens=COUNTER.count)
    assert [(i.item.ref, i.excerpt is not None) for i in first.included] == [("long", True), ("short", False)]
    whole = pack(items, budget=320, min_relevance=0.0, count_tokens=COUNTER.count, passages_first=False)
    assert [(i.item.ref, i.excerpt is not None) for i in whole.included] == [("long", False)]
    # With room for both whole, both are shown whole either way.
    for passages_first in (True, False):
        roomy = pack(
            items, budget=400, min_relevance=0.0, count_tokens=COUNTER.count, passages_first=passages_first
        )
        assert [(i.item.ref, i.excerpt) for i in roomy.included] == [("long", None), ("short", None)]
        assert roomy.tokens_used == COUNTER.count(roomy.context) <= 400


def test_widening_goes_best_first_and_never_past_the_budget() -> None:
    items = [long_item("a", 0.9, 200, 40), long_item("b", 0.8, 120, 40), short_item("c", 0.7, 20)]
    packed = pack(items, budget=260, min_relevance=0.0, count_tokens=COUNTER.count)
    # a, b, c as excerpts and the short one (~105); a whole would need ~160 more: b (~80 more) fits.
    assert [(i.item.ref, i.excerpt is not None) for i in packed.included] == [
        ("a", True),
        ("b", False),
        ("c", False),
    ]
    assert packed.tokens_used == COUNTER.count(packed.context) <= 260


def test_an_excerpt_is_taken_only_while_as_much_room_is_left_after_it() -> None:
    long = long_item("long", 0.9, 300, 40)
    excerpt_tokens = long.excerpt.tokens  # type: ignore[union-attr]
    shorts = [short_item(f"s{i}", 0.5 - i / 100, 10) for i in range(8)]
    # Room for the excerpt and as much again: taken first.
    roomy = pack([long, *shorts], budget=2 * excerpt_tokens, min_relevance=0.0, count_tokens=COUNTER.count)
    assert roomy.included[0].item.ref == "long"
    assert roomy.included[0].excerpt is not None
    # It would fit, but would leave less room than itself: the short memories take the budget instead.
    tight = pack(
        [long, *shorts], budget=2 * excerpt_tokens - 1, min_relevance=0.0, count_tokens=COUNTER.count
    )
    assert "long" not in [i.item.ref for i in tight.included]
    assert ("long", SkipReason.BUDGET) in [(s.item.ref, s.reason) for s in tight.skipped]
    assert tight.tokens_used <= 2 * excerpt_tokens - 1
