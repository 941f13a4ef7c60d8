"""The synthetic persona generator and the predecessors' grading rules (pure parts)."""

from __future__ import annotations

from collections import Counter

import pytest

from app.agent.extract import offline_actions
from bench.quality import seeds, synthetic
from bench.quality.model import to_neutral


def test_generation_is_deterministic_per_seed() -> None:
    assert to_neutral(synthetic.generate(3, 4)) == to_neutral(synthetic.generate(3, 4))
    assert to_neutral(synthetic.generate(3, 4)) != to_neutral(synthetic.generate(4, 4))


def test_every_label_names_a_turn_and_stale_turns_come_first() -> None:
    data = synthetic.generate(7, 12)
    turns = {c.id: {t.id: t for t in c.turns} for c in data.conversations}
    categories = Counter(q.category for q in data.questions)
    assert set(categories) == {"stable", "change", "correction", "temporary", "project", "nothing known"}
    for q in data.questions:
        known = turns[q.conversation_id]
        assert set(q.evidence) | set(q.stale_evidence) <= set(known)
        if q.category in ("change", "correction"):
            [current] = q.evidence
            assert all(known[s].at < known[current].at for s in q.stale_evidence)
            assert q.kind == "update"
        if q.category == "project":
            assert q.project is not None
            assert known[q.evidence[0]].project == q.project
            assert known[q.stale_evidence[0]].project not in (None, q.project)
        if q.category == "temporary":
            conv = next(c for c in data.conversations if c.id == q.conversation_id)
            assert (
                known[q.stale_evidence[0]].session_id != conv.turns[-1].session_id
            )  # lapsed by question time
        if q.group == "abstention":
            assert not q.evidence
            assert not q.stale_evidence


@pytest.mark.parametrize("family", synthetic.FAMILIES, ids=lambda f: f.name)
def test_statement_and_change_templates_land_in_one_slot(family: synthetic.Family) -> None:
    """What the generator relies on: the offline extractor puts a value and its later change in the same
    (subject, type) slot, so Engram can supersede the old value."""
    first, second = family.values[0], family.values[1]
    [stated] = [a for a in offline_actions([("user", family.state.format(v=first))]) if a.action == "create"]
    for template in family.change:
        [changed] = [
            a for a in offline_actions([("user", template.format(v=second))]) if a.action == "create"
        ]
        assert (changed.subject, changed.type) == (stated.subject, stated.type)
        assert stated.subject is not None


# -- memopilot grading -------------------------------------------------------------------------------


def test_keywords_match_on_alphanumeric_boundaries() -> None:
    assert seeds.mentions("npm", "use npm here")
    assert not seeds.mentions("npm", "use pnpm here")
    assert seeds.mentions("api key", "Never commit API keys")  # simple plural
    assert seeds.mentions("next.js", "Use Next.js instead")


def test_rejection_language_is_not_an_assertion() -> None:
    assert not seeds.asserts("flask", "Actually, use FastAPI instead of Flask.")
    assert not seeds.asserts("aws", "We no longer deploy on AWS")
    assert not seeds.asserts("dark", "dark is outdated")
    assert seeds.asserts("flask", "Use Flask for the backend.")


def test_outdated_error_and_context_recall() -> None:
    lines = ["- [d preference] Use Flask for the backend.", "- [d preference] Use FastAPI instead of Flask."]
    assert seeds.outdated_error(lines[:1], ["fastapi"], ["flask"])
    assert not seeds.outdated_error(lines[1:], ["fastapi"], ["flask"])
    scenario = {"expected_answer_keywords": ["short"], "expected_answer_alternatives": {"short": ["concise"]}}
    assert seeds.context_recall(scenario, "- concise answers please")
    assert seeds.context_recall({"expected_answer_keywords": []}, "x") is None
