"""The quality benchmark's metrics, packing, BM25 and units: pure functions on small inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.lib.tokens import TokenCounter
from bench.quality import metrics
from bench.quality.bm25 import BM25, tokenize
from bench.quality.model import Conversation, Question, Turn
from bench.quality.systems import Baselines, pack
from bench.quality.units import chunk, extracted_units, line_for, raw_units

COUNTER = TokenCounter()
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def q(**kw: object) -> Question:
    base: dict[str, object] = {"id": "q", "conversation_id": "c", "question": "?", "category": "x"}
    return Question(**(base | kw))  # type: ignore[arg-type]


def test_evidence_recall_counts_each_gold_turn_once() -> None:
    assert metrics.evidence_recall(["a", "b"], ["a", "a", "c"]) == 0.5
    assert metrics.evidence_recall(["a"], []) == 0.0
    with pytest.raises(ValueError, match="no evidence"):
        metrics.evidence_recall([], ["a"])


def test_recall_at_k_is_over_distinct_turns() -> None:
    ranking = ["a", "a", "a", "b", "c"]  # a turn split into chunks takes one place
    assert metrics.recall_at_k(["b"], ranking, 2) == 1.0
    assert metrics.recall_at_k(["c"], ranking, 2) == 0.0


@pytest.mark.parametrize(
    ("retrieved", "ok"),
    [
        (["new"], True),
        (["new", "old"], True),
        (["old", "new"], False),
        (["old"], False),
        ([], False),
    ],
)
def test_update_order(retrieved: list[str], ok: bool) -> None:
    assert metrics.update_order(["new"], ["old"], retrieved) is ok


def test_score_on_ids_and_on_substrings() -> None:
    by_ids = q(evidence=("t2",), stale_evidence=("t1",), kind="update")
    s = metrics.score(by_ids, ["t1", "t2"], "- ctx")
    assert (s.recall, s.stale, s.update_ok, s.abstained) == (1.0, True, False, False)
    by_text = q(expected=("Porto", "cat"), stale=("Valencia",))
    s = metrics.score(by_text, [], "- [2024-01-01 fact] I live in PORTO")
    assert (s.recall, s.stale) == (0.5, False)
    empty = metrics.score(q(group="abstention"), [], "")
    assert (empty.recall, empty.stale, empty.abstained) == (None, None, True)
    both = metrics.score(q(evidence=("a", "b"), kind="contradiction"), ["b"], "x")
    assert both.both is False


def test_ranks_and_percentile() -> None:
    assert metrics.ranks(q(), ["a"]) is None
    assert metrics.ranks(q(evidence=("c",)), ["a", "b", "c"]) == {
        "r@5": 1.0,
        "r@10": 1.0,
        "r@25": 1.0,
        "r@50": 1.0,
    }
    assert metrics.percentile([5.0, 1.0, 3.0], 50) == 3.0
    assert metrics.percentile([], 50) is None
    assert metrics.mean([None, 1, 0]) == 0.5


# -- units, packing, baselines ------------------------------------------------------------------------


def test_chunk_cuts_at_boundaries_and_respects_the_limit() -> None:
    text = ("word " * 300).strip() + "\n\n" + "tail " * 10
    pieces = chunk(text, 500)
    assert all(len(p) <= 500 for p in pieces)
    assert " ".join(pieces).split() == text.split()
    assert chunk("short", 500) == ["short"]
    assert chunk("   ", 500) == []


def _conv(texts: list[tuple[str, str]], speaker: str | None = None) -> Conversation:
    turns = [
        Turn(str(i), role, text, T0 + timedelta(minutes=i), "s1", speaker=speaker)
        for i, (role, text) in enumerate(texts)
    ]
    return Conversation("c", "u", turns)


def test_raw_units_render_like_engram_and_count_tokens() -> None:
    conv = _conv([("user", "I live in Porto."), ("assistant", "x " * 1200)])
    units = raw_units(conv, COUNTER, chunk_chars=1000)
    assert units[0].line == "- [2024-01-01] user: I live in Porto."  # a turn: its type adds nothing
    assert units[0].tokens == COUNTER.count(units[0].line)
    assert len(units) > 2
    assert {u.turn_id for u in units[1:]} == {"1"}
    assert all(len(u.content) <= 1000 for u in units)
    assert (
        line_for("preference", "theme", "I like dark mode.", T0)
        == "- [2024-01-01 preference: theme] I like dark mode."
    )
    assert (
        line_for("preference", "dark mode", "I like dark mode.", T0)
        == "- [2024-01-01 preference] I like dark mode."
    )


def test_extracted_units_qualify_facts_by_speaker() -> None:
    conv = _conv([("user", "I live in Boston."), ("user", "Thanks!")], speaker="Ann")
    [call], [forgets] = extracted_units(conv, COUNTER)
    assert forgets == []
    assert [(u.turn_id, u.subject) for u in call] == [("0", "ann home city")]
    assert call[0].content.startswith("Ann: I live in Boston")


def test_pack_skips_what_does_not_fit_and_never_exceeds_the_budget() -> None:
    conv = _conv([("user", "short one"), ("user", "a much longer line " * 20), ("user", "short two")])
    units = raw_units(conv, COUNTER)
    for budget in range(0, 200, 7):
        packed = pack([1, 0, 2], units, budget, COUNTER)
        assert packed.tokens <= budget
        assert packed.tokens == COUNTER.count(packed.context)
    small = pack([1, 0, 2], units, units[0].tokens + units[2].tokens + 1, COUNTER)
    assert small.chosen == [0, 2]  # the long one is skipped, the walk goes on
    history = pack([2, 1, 0], units, 10_000, COUNTER, chronological=True)
    assert history.chosen == [0, 1, 2]


def test_baselines_rankings() -> None:
    conv = _conv(
        [
            ("user", "I adopted a cat named Tom."),
            ("user", "The weather is nice."),
            ("user", "Tom the cat sleeps."),
        ]
    )
    units = raw_units(conv, COUNTER)
    base = Baselines(units, None, COUNTER)
    assert base.ranking("full_history", "x", None)[0] == [2, 1, 0]
    assert base.ranking("bm25", "what is my cat called", None)[0][:2] in ([0, 2], [2, 0])
    assert base.ranking("no_memory", "x", None)[0] == []
    assert base.ranking("dense", "x", None)[0] == []  # no vectors: nothing to rank
    with pytest.raises(ValueError, match="unknown"):
        base.ranking("nope", "x", None)


def test_bm25_prefers_rare_terms_and_shorter_documents() -> None:
    docs = ["cat cat dog", "dog dog dog dog dog dog", "cat", "bird"]
    index = BM25(docs)
    assert index.rank("cat")[0] == 2  # the short one first
    assert 3 not in index.rank("cat")  # no match, not ranked
    assert index.idf("bird") > index.idf("dog")
    assert tokenize("The Cats' stories and I") == ["cat", "story"]


def test_a_turn_counts_as_shown_in_full_only_with_every_unit_of_it() -> None:
    per_turn = {"t1": 1, "t2": 2, "t3": 1}
    assert sorted(metrics.whole_turns(["t1", "t2", "t3"], per_turn)) == ["t1", "t3"]  # one of t2's two chunks
    assert sorted(metrics.whole_turns(["t2", "t1", "t2"], per_turn)) == ["t1", "t2"]
    assert metrics.whole_turns([], per_turn) == []
