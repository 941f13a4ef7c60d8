"""The peer line's pure parts: its data, the exact answer it compares with, and its summary."""

from __future__ import annotations

import numpy as np
import pytest

from bench.peers.__main__ import dataset_name, parse_sizes
from bench.peers.data import Fact, Query, exact_top_k, facts, facts_per_user, overlap, queries
from bench.peers.report import render


def test_facts_are_distinct_spread_evenly_and_reproducible() -> None:
    got = facts(2000, 20)
    assert len(got) == 2000
    assert len({f.text for f in got}) == 2000  # results are matched back to facts by text
    assert set(facts_per_user(got).values()) == {100}
    assert got == facts(2000, 20)
    assert got != facts(2000, 20, seed=8)


def test_uneven_facts_give_the_remainder_to_the_first_users() -> None:
    counts = facts_per_user(facts(10, 3))
    assert sorted(counts.values()) == [3, 3, 4]


def test_facts_need_one_per_user() -> None:
    with pytest.raises(ValueError, match="one fact per user"):
        facts(3, 4)


def test_queries_aim_at_known_users_and_repeat() -> None:
    got = queries(200, 20)
    assert len(got) == 200
    assert {q.user_id for q in got} <= {f.user_id for f in facts(20, 20)}
    assert len({q.user_id for q in got}) > 10
    assert got == queries(200, 20)


def test_exact_top_k_is_the_users_nearest_by_cosine() -> None:
    fact_list = [Fact("a", "a0"), Fact("b", "b0"), Fact("a", "a1"), Fact("a", "a2"), Fact("b", "b1")]
    vectors = np.array(
        [[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [0.0, 3.0], [0.9, 0.1]]  # not unit: cosine normalises
    )
    query = Query("a", "q")
    assert exact_top_k(fact_list, vectors, query, np.array([0.0, 1.0]), 2) == ["a2", "a1"]
    assert exact_top_k(fact_list, vectors, query, np.array([1.0, 0.0]), 10) == ["a0", "a1", "a2"]
    assert exact_top_k(fact_list, vectors, Query("c", "q"), np.array([1.0, 0.0]), 2) == []


def test_overlap_is_the_found_share_of_the_exact_answer() -> None:
    assert overlap(["x", "y", "z"], ["y", "w"]) == 0.5
    assert overlap([], ["y"]) == 0.0
    assert overlap(["x"], []) == 1.0


def test_sizes_parse_as_facts_and_users() -> None:
    assert parse_sizes("2000:20,10000:100") == [(2000, 20), (10000, 100)]
    assert dataset_name(10000, 100) == "10k facts over 100 users"
    with pytest.raises(ValueError, match="facts:users"):
        parse_sizes("2000")


def test_the_summary_puts_systems_side_by_side_with_the_load() -> None:
    pct = {"n": 10, "p50": 9.5, "p95": 20.0, "p99": 30.0, "mean": 11.0}
    system = {
        "search_ms": pct,
        "embed_ms": pct,
        "add_single_ms": pct,
        "add_single_per_s": 90.0,
        "returned": {"mean": 5.0, "min": 2.0},
        "overlap": {"mean": 0.5, "min": 0.25},
    }
    payload = {
        "machine": {"cpus": 2, "python": "3.11", "when": "now"},
        "datasets": [
            {
                "name": "2k facts over 20 users",
                "facts": 2000,
                "users": 20,
                "queries": 200,
                "load_average": {"start": 4.2, "end": 5.0},
                "plain_embed_ms": pct,
                "systems": {
                    "mem0": system,
                    "engram_in_process": system
                    | {"add_batch_per_s": 300.0, "candidate_overlap": {"mean": 1.0, "min": 1.0}},
                },
            }
        ],
        "notes": ["a note"],
    }
    markdown = render(payload)
    assert "load average 4.2 at the start, 5.0 at the end" in markdown
    assert "| | mem0 (in-process) | Engram in-process |" in markdown
    assert "| recall / search p50 / p95 / p99 ms | 9.5 / 20 / 30 | 9.5 / 20 / 30 |" in markdown
    assert "| batch adds per second | - | 300 |" in markdown
    assert (
        "| overlap of cosine candidates with the exact top-10 of the stored vectors | - | 1.00 (min 1.00) |"
        in markdown
    )
    assert "plain script" in markdown
    assert "Engram HTTP" not in markdown
    assert markdown.endswith("- a note\n")
