"""The seed-suite grading rules (bench/seed_suites.py) on small hand-made inputs, branch by branch."""

from __future__ import annotations

from typing import Any

import pytest

from bench.seed_suites import (
    aggregate_active_use,
    grade_a,
    grade_active_use,
    grade_b,
    grade_c,
    grade_d,
    grade_e,
    grade_f,
    grade_g,
    grade_h,
    grade_i,
    grade_j,
    hits,
    parse_grading,
    session_id,
    tally,
    vocabulary_clashes,
    with_kw,
)

DONE = ["forgotten", "noted", "done", "updated"]


def rec(content: str, status: str = "active") -> dict[str, Any]:
    return {"content": content, "status": status}


def turn(answer: str = "", *tools: str) -> dict[str, Any]:
    return {"answer": answer, "tools": list(tools)}


def test_session_ids_follow_prefix_scenario_index() -> None:
    assert session_id("active-", "veg-dish-d1", 0) == "active-veg-dish-d1-s0"
    assert session_id("", "x", 3) == "x-s3"


def test_hits_and_with_kw_are_casefold_substring() -> None:
    assert hits("Try the Tofu CURRY", ["tofu", "curry", "beef"]) == ["tofu", "curry"]
    records = [rec("I live in Porto"), rec("I live in VALENCIA", "superseded"), rec("porto", "pinned")]
    assert len(with_kw(records, "porto", "active")) == 2  # pinned counts as active
    assert len(with_kw(records, "valencia", "superseded")) == 1
    assert with_kw(records, "valencia", "active") == []
    assert len(with_kw(records, "live")) == 2


SCENARIO = {
    "id": "s",
    "depth": 2,
    "expect_any": ["porto"],
    "must_not": ["lisbon"],
    "store_active_required": ["porto"],
    "store_superseded_required": ["valencia"],
    "store_active_forbidden": ["madrid"],
}
GOOD_STORE = [rec("I live in Porto"), rec("I live in Valencia", "superseded")]


FLAGS = ("outcome_pass", "store_pass", "process_pass", "task_success")


def flags(row: dict[str, Any]) -> tuple[bool, ...]:
    return tuple(row[k] for k in FLAGS)


def test_active_use_all_three_checks_pass() -> None:
    assert flags(grade_active_use(SCENARIO, "Fly to Porto.", ["recall"], GOOD_STORE)) == (True,) * 4


def test_active_use_outcome_fails_on_must_not_or_missing_expect() -> None:
    row = grade_active_use(SCENARIO, "Porto or Lisbon", ["recall"], GOOD_STORE)
    assert flags(row) == (False, True, True, False)
    assert row["violations"] == ["lisbon"]
    assert not grade_active_use(SCENARIO, "Fly to Faro", ["recall"], GOOD_STORE)["outcome_pass"]
    assert grade_active_use({**SCENARIO, "expect_any": []}, "anything", [], [])["outcome_pass"]


def test_active_use_store_checks_active_superseded_and_forbidden() -> None:
    superseded_missing = grade_active_use(SCENARIO, "porto", ["recall"], [rec("porto"), rec("valencia")])
    assert flags(superseded_missing) == (True, False, True, False)
    assert superseded_missing["missing_superseded"] == ["valencia"]
    forbidden = grade_active_use(SCENARIO, "porto", ["recall"], [*GOOD_STORE, rec("madrid flat")])
    assert not forbidden["store_pass"]
    assert forbidden["forbidden_active"] == ["madrid"]
    only_old = grade_active_use(SCENARIO, "porto", ["recall"], [rec("porto", "superseded")])
    assert only_old["missing_active"] == ["porto"]


def test_active_use_process_needs_recall_in_the_decision_turn() -> None:
    row = grade_active_use(SCENARIO, "Porto", ["remember"], GOOD_STORE)
    assert flags(row) == (True, True, False, False)


def test_aggregate_rates_violations_and_depth() -> None:
    def r(depth: int, ok: bool, violations: list[str]) -> dict[str, Any]:
        flags = {"outcome_pass": ok, "store_pass": True, "process_pass": ok, "task_success": ok}
        return {"depth": depth, "violations": violations, **flags}

    agg = aggregate_active_use([r(1, True, []), r(1, False, ["beef"]), r(2, True, []), r(2, True, [])])
    rates = {k: agg[k] for k in ("scenarios", "task_success_rate", "outcome_pass_rate", "store_pass_rate")}
    assert rates == {
        "scenarios": 4,
        "task_success_rate": 0.75,
        "outcome_pass_rate": 0.75,
        "store_pass_rate": 1.0,
    }
    assert agg["constraint_violation_rate"] == 0.25
    assert agg["by_depth"] == {"1": {"n": 2, "task_success": 0.5}, "2": {"n": 2, "task_success": 1.0}}
    assert aggregate_active_use([]) == {"scenarios": 0}


def test_vocabulary_clashes() -> None:
    a = {"id": "a", "sessions": [["I like tea"]], "store_active_required": ["tea"]}
    b = {"id": "b", "sessions": [["tea time"], ["go"]], "store_active_required": ["coffee"]}
    assert vocabulary_clashes([a, b]) == ["a:tea in b"]
    assert vocabulary_clashes([a, {**b, "sessions": [["x"]]}]) == []


def test_parse_grading_lists_and_template() -> None:
    text = "then ask 'Do I still use {drop}?' in the same session. PASS if 'recall' and one of ['no','not']."
    parsed = parse_grading(text)
    assert (parsed["ask"], parsed["listed"]) == ("Do I still use {drop}?", ["no", "not"])
    assert parse_grading('PASS if one of ["don\'t","no,"], else FAIL')["listed"] == ["don't", "no,"]
    assert parse_grading("PASS if honest (no record, don't have) and ...")["parens"] == [
        "no record",
        "don't have",
    ]
    assert parse_grading("no lists") == {"listed": [], "parens": [], "ask": ""}


@pytest.mark.parametrize(
    ("seeded", "correction", "records", "verdict"),
    [
        (False, turn("noted", "remember"), [rec("kalimba")], "SKIP"),
        (True, turn("ok", "remember"), [rec("kalimba", "superseded"), rec("flute")], "PASS"),
        (True, turn("ok", "remember"), [rec("kalimba"), rec("stopped kalimba")], "PASS"),
        (True, turn("ok", "remember"), [rec("kalimba"), rec("kalimba", "forgotten")], "PASS"),
        (True, turn("Noted, thanks"), [rec("kalimba")], "FAIL"),
        (True, turn("ok", "remember"), [rec("kalimba")], "WARN"),
        (True, turn("hmm"), [rec("kalimba")], "WARN"),
    ],
)
def test_grade_a(seeded: bool, correction: dict[str, Any], records: list[dict], verdict: str) -> None:
    assert grade_a(seeded, correction, records, "kalimba", DONE)[0] == verdict


@pytest.mark.parametrize(
    ("seeded", "answer", "records", "verdict"),
    [
        (False, "done", [], "SKIP"),
        (True, "x", [rec("zither", "forgotten")], "PASS"),
        (True, "Forgotten 1 memory", [rec("zither")], "FAIL"),
        (True, "I could not find it", [rec("a zither")], "WARN"),
    ],
)
def test_grade_b(seeded: bool, answer: str, records: list[dict], verdict: str) -> None:
    assert grade_b(seeded, turn(answer, "forget"), records, "zither", DONE)[0] == verdict


def test_grade_c() -> None:
    assert grade_c(3, 3)[0] == "PASS"
    assert grade_c(3, 4)[0] == "FAIL"


@pytest.mark.parametrize(
    ("records", "verdict"),
    [
        ([rec("ferry"), rec("bicycle", "superseded"), rec("tram", "forgotten")], "PASS"),
        ([rec("ferry"), rec("tram")], "FAIL"),
        ([rec("ferry", "superseded"), rec("tram")], "FAIL"),
    ],
)
def test_grade_d(records: list[dict], verdict: str) -> None:
    assert grade_d(records, "ferry", ["bicycle", "tram"])[0] == verdict


def test_grade_e() -> None:
    honest = ["don't have", "no record"]
    assert grade_e("I don't have that", honest, 2, 2)[0] == "PASS"
    assert grade_e("I don't have that", honest, 2, 3)[0] == "FAIL"
    assert grade_e("You keep 3 llamas", honest, 2, 2)[0] == "WARN"
    assert grade_e("I don\u2019t have that", honest, 2, 2)[0] == "WARN"  # literal apostrophes, as published


def test_grade_f() -> None:
    noes = ["no", "not", "quit"]
    assert grade_f(turn("ok", "remember"), "You quit squash.", "squash", noes, DONE)[0] == "PASS"
    assert grade_f(turn("ok", "remember"), "You quit it.", "squash", noes, DONE)[0] == "WARN"
    assert grade_f(turn("Updated!"), "You quit squash.", "squash", noes, DONE)[0] == "FAIL"
    assert grade_f(turn("hmm"), "You quit squash.", "squash", noes, DONE)[0] == "WARN"


def test_grade_g() -> None:
    assert grade_g(turn("Your favourite author is Murakami", "recall"), "murakami")[0] == "PASS"
    assert grade_g(turn("Murakami, I think"), "murakami")[0] == "WARN"
    assert grade_g(turn("No idea", "recall"), "murakami")[0] == "FAIL"


def test_grade_h() -> None:
    negatives = ["don't", "no,", "not "]
    assert grade_h("No, you don't like it", negatives)[0] == "PASS"
    assert grade_h("Here is a horror film", negatives)[0] == "FAIL"


@pytest.mark.parametrize(("copies", "verdict"), [(0, "PASS"), (1, "PASS"), (2, "WARN"), (3, "FAIL")])
def test_grade_i_counts_active_records_with_the_keyword_stem(copies: int, verdict: str) -> None:
    records = [rec("a Gaggia espresso machine") for _ in range(copies)] + [rec("espresso", "superseded")]
    assert grade_i(records, "espresso_machine")[0] == verdict


J_CTX = {"done": DONE, "parens": ["nothing", "no record"]}


def test_grade_j_never_stored() -> None:
    assert grade_j("never_stored", turn("I found nothing"), [rec("a")], [rec("a")], J_CTX)[0] == "PASS"
    assert grade_j("never_stored", turn("nothing"), [], [rec("a")], J_CTX)[0] == "WARN"
    assert grade_j("never_stored", turn("Done, forgotten."), [rec("a")], [rec("a")], J_CTX)[0] == "FAIL"
    assert grade_j("never_stored", turn("hmm"), [rec("a")], [rec("a")], J_CTX)[0] == "WARN"


def test_grade_j_list_all() -> None:
    assert grade_j("list_all", turn("x", "recall"), [rec("a")], [rec("a")], J_CTX)[0] == "PASS"
    assert grade_j("list_all", turn("x"), [rec("a")], [rec("a")], J_CTX)[0] == "WARN"
    assert grade_j("list_all", turn("x", "recall"), [rec("a")], [rec("a"), rec("b")], J_CTX)[0] == "FAIL"


def test_grade_j_forget_all() -> None:
    wiped = [rec("a", "forgotten")]
    assert grade_j("forget_all", turn("x", "forget"), [rec("a")], wiped, J_CTX)[0] == "PASS"
    assert grade_j("forget_all", turn("All cleared, done"), [rec("a")], [rec("a")], J_CTX)[0] == "FAIL"
    assert grade_j("forget_all", turn("I found nothing"), [rec("a")], [rec("a")], J_CTX)[0] == "WARN"


def test_tally() -> None:
    assert tally(["PASS", "WARN", "PASS", "SKIP"]) == "2 PASS, 1 WARN, 1 SKIP"
    assert tally([]) == ""
