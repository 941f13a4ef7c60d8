"""Dreaming's pure parts: the model's answer as untrusted input, validation against live ids, the
offline rules, and re-validation before apply."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.db.models import DreamProposal, Memory
from app.dream.digest import digestible, dream_messages
from app.dream.models import Known
from app.dream.offline import duplicate_clusters, offline_forgets, offline_merges
from app.dream.output import MAX_PROPOSALS, ModelOutputError, ModelProposal, parse_model_output
from app.dream.revalidate import stale_reason
from app.dream.validate import validate_model_proposals
from app.lib.settings import DEFAULT_HALF_LIVES
from app.memory.fingerprint import fingerprints

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def known(**over: Any) -> Known:
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "project_id": None,
        "type": "preference",
        "subject": None,
        "content": "I drink coffee every morning",
        "importance": 0.5,
        "salience": 1.0,
        "privacy": "public",
        "pinned": False,
        "valid_from": NOW - timedelta(days=3),
        "last_accessed_at": None,
    }
    values.update(over)
    return Known(**values)


# -- parsing the model's answer ---------------------------------------------------------------------


def test_model_output_in_a_code_fence_is_read() -> None:
    text = '```json\n{"proposals": [{"kind": "forget", "target_ids": ["x"]}]}\n```'
    proposals, bad = parse_model_output(text)
    assert [p.kind for p in proposals] == ["forget"]
    assert bad == 0


def test_items_that_do_not_fit_the_schema_are_dropped_one_by_one() -> None:
    text = (
        '{"proposals": [{"kind": "forget", "target_ids": [1, 2]}, {"kind": "forget"}, "nonsense",'
        ' {"kind": "merge", "target_ids": ["a", "b"], "content": "x", "importance": "high"},'
        ' {"kind": "forget", "target_ids": ["ok"], "extra": "ignored"}]}'
    )
    proposals, bad = parse_model_output(text)
    assert [p.target_ids for p in proposals] == [["ok"]]
    assert bad == 4


def test_too_many_proposals_are_cut() -> None:
    items = ",".join('{"kind": "forget", "target_ids": ["x"]}' for _ in range(MAX_PROPOSALS + 5))
    proposals, bad = parse_model_output('{"proposals": [' + items + "]}")
    assert len(proposals) == MAX_PROPOSALS
    assert bad == 5


@pytest.mark.parametrize("text", [None, "", "Sure! Here are my proposals.", '{"answer": 3}', "[1, 2"])
def test_an_answer_that_is_not_the_json_asked_for_is_an_error(text: str | None) -> None:
    with pytest.raises(ModelOutputError):
        parse_model_output(text)


# -- validation against the user's live memories ------------------------------------------------------


def test_invented_foreign_and_malformed_ids_never_survive_validation() -> None:
    a, b, c = known(), known(), known()
    live = {k.id: k for k in (a, b, c)}
    foreign = str(uuid.uuid4())  # another user's or tenant's memory looks exactly like an invented id
    raw = [
        ModelProposal(kind="merge", target_ids=[str(a.id), str(b.id)], content="I drink coffee daily"),
        ModelProposal(kind="merge", target_ids=[str(a.id), foreign], content="x"),
        ModelProposal(kind="supersede", target_ids=[str(c.id), "not-a-uuid"]),
        ModelProposal(kind="forget", target_ids=[foreign, str(c.id), str(c.id)]),
        ModelProposal(kind="forget", target_ids=[foreign]),
        ModelProposal(kind="resalience", target_ids=[str(b.id)], salience=1.5),
        ModelProposal(kind="delete_everything", target_ids=[str(a.id)]),
    ]
    kept, dropped = validate_model_proposals(raw, live, max_chars=8000)
    assert [(k.kind, k.target_ids) for k in kept] == [("merge", (a.id, b.id)), ("forget", (c.id,))]
    assert len(dropped) == 5
    assert all(set(k.target_ids) <= set(live) for k in kept)


def test_a_merge_needs_text_one_project_and_a_type() -> None:
    a, b = known(), known(project_id="p1")
    c, d = known(type="fact"), known(type="decision")
    live = {k.id: k for k in (a, b, c, d)}
    raw = [
        ModelProposal(kind="merge", target_ids=[str(a.id), str(b.id)], content="x"),
        ModelProposal(kind="merge", target_ids=[str(c.id), str(d.id)], content="x"),
        ModelProposal(kind="merge", target_ids=[str(c.id), str(d.id)], content="x", type="fact"),
        ModelProposal(kind="merge", target_ids=[str(a.id), str(a.id)], content="x"),
        ModelProposal(kind="merge", target_ids=[str(a.id), str(c.id)], content="  "),
        ModelProposal(kind="merge", target_ids=[str(a.id), str(c.id)], content="y" * 20, type="fact"),
    ]
    kept, dropped = validate_model_proposals(raw, live, max_chars=10)
    assert [(k.payload["type"], k.target_ids) for k in kept] == [("fact", (c.id, d.id))]
    assert len(dropped) == 5


def test_merge_text_and_rationale_are_redacted_before_they_are_stored() -> None:
    a, b = known(), known()
    secret = "sk-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
    raw = [
        ModelProposal(
            kind="merge",
            target_ids=[str(a.id), str(b.id)],
            content=f"The key is {secret}",
            rationale=f"because {secret}",
        )
    ]
    [kept], _ = validate_model_proposals(raw, {a.id: a, b.id: b}, max_chars=8000)
    assert secret not in kept.payload["content"]
    assert secret not in kept.rationale


def test_a_model_supersede_records_old_new_and_the_model_rule() -> None:
    old, new = known(), known()
    raw = [ModelProposal(kind="supersede", target_ids=[str(old.id), str(new.id)])]
    [kept], _ = validate_model_proposals(raw, {old.id: old, new.id: new}, max_chars=8000)
    assert kept.payload == {"superseded": str(old.id), "successor": str(new.id), "rule": "model"}


def test_sensitive_memories_are_never_shown_to_a_model() -> None:
    public, sensitive = known(content="likes tea"), known(content="diagnosis X", privacy="sensitive")
    visible = digestible([public, sensitive])
    assert visible == [public]
    prompt = dream_messages(visible, NOW)[1]["content"]
    assert str(public.id) in prompt
    assert "diagnosis" not in prompt


# -- the offline rules ----------------------------------------------------------------------------------


def test_near_duplicate_pairs_form_clusters() -> None:
    a, b, c, d, e = (uuid.uuid4() for _ in range(5))
    clusters = duplicate_clusters([(a, b, 0.95), (b, c, 0.91), (d, e, 0.97)])
    assert sorted((sorted(ids), cos) for ids, cos in clusters) == sorted(
        [(sorted([a, b, c]), 0.91), (sorted([d, e]), 0.97)]
    )


def test_offline_merge_keeps_the_newest_wording_and_leaves_protected_memories_alone() -> None:
    older = known(valid_from=NOW - timedelta(days=9), importance=0.9)
    newer = known(content="Every morning I drink coffee", valid_from=NOW - timedelta(days=1))
    pinned, other = known(pinned=True), known()
    live = {k.id: k for k in (older, newer, pinned, other)}
    merges = offline_merges([(older.id, newer.id, 0.94), (pinned.id, other.id, 0.99)], live)
    assert len(merges) == 1
    [merge] = merges
    assert merge.target_ids[0] == newer.id
    assert set(merge.target_ids) == {older.id, newer.id}
    assert merge.payload["content"] == "Every morning I drink coffee"
    assert merge.payload["importance"] == 0.9


def test_offline_forgets_only_decayed_unimportant_unprotected_memories() -> None:
    long_ago = NOW - timedelta(days=365)
    stale = known(type="episodic", importance=0.1, valid_from=long_ago)
    kept = [
        known(type="episodic", importance=0.5, valid_from=long_ago),  # important enough
        known(type="episodic", importance=0.1, valid_from=NOW - timedelta(days=5)),  # fresh
        known(type="preference", importance=0.1, valid_from=long_ago),  # never decays
        known(type="episodic", importance=0.1, valid_from=long_ago, pinned=True),  # pinned
        known(type="episodic", importance=0.1, valid_from=long_ago, last_accessed_at=NOW),  # just used
    ]
    forgets = offline_forgets(
        [stale, *kept], NOW, half_lives=DEFAULT_HALF_LIVES, importance_below=0.3, decayed_below=0.05
    )
    assert [f.target_ids for f in forgets] == [(stale.id,)]
    assert "decayed salience" in forgets[0].rationale


# -- re-validation before apply -------------------------------------------------------------------------


def memory(**over: Any) -> Memory:
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "user_id": "u",
        "project_id": None,
        "type": "fact",
        "subject": None,
        "content": "x",
        "status": "active",
        "importance": 0.5,
        "salience": 1.0,
        "confidence": 0.8,
        "privacy": "public",
        "expires_at": None,
        "updated_at": NOW,
        "content_hash": "h",
    }
    values.update(over)
    return Memory(**values)


def proposal(targets: list[Memory], kind: str = "forget", **payload: Any) -> DreamProposal:
    return DreamProposal(
        id=uuid.uuid4(),
        user_id="u",
        kind=kind,
        target_ids=[t.id for t in targets],
        payload={"fingerprint": fingerprints(targets), **payload},
        status="approved",
    )


def test_an_unchanged_live_target_is_not_stale() -> None:
    m = memory()
    assert stale_reason(proposal([m]), {m.id: m}, NOW) is None


def test_a_changed_gone_dead_expired_or_foreign_target_makes_the_proposal_stale() -> None:
    m = memory()
    p = proposal([m])
    assert "changed" in str(stale_reason(p, {m.id: memory(id=m.id, importance=0.9)}, NOW))
    assert "no longer exists" in str(stale_reason(p, {}, NOW))
    assert "superseded" in str(stale_reason(p, {m.id: memory(id=m.id, status="superseded")}, NOW))
    assert "expired" in str(stale_reason(p, {m.id: memory(id=m.id, expires_at=NOW)}, NOW))
    assert "no longer exists" in str(stale_reason(p, {m.id: memory(id=m.id, user_id="v")}, NOW))


def test_a_proposal_with_a_broken_payload_is_stale_not_an_error() -> None:
    a, b = memory(), memory()
    targets = {a.id: a, b.id: b}
    assert stale_reason(proposal([a, b], "merge", content="", type="fact", importance=0.5), targets, NOW)
    assert stale_reason(proposal([a, b], "merge", content="x", type="nope", importance=0.5), targets, NOW)
    assert stale_reason(proposal([a], "resalience", salience=2), {a.id: a}, NOW)
    assert stale_reason(
        proposal([a, b], "supersede", superseded=str(a.id), successor=str(a.id)), targets, NOW
    )
    good = proposal([a, b], "supersede", superseded=str(a.id), successor=str(b.id))
    assert stale_reason(good, targets, NOW) is None
