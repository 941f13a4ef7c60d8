"""The acceptance cases of the core issue, through HTTP."""

from __future__ import annotations

from tests.conftest import Api


async def test_newer_decision_supersedes_older_in_same_slot_and_recall_returns_only_current(api: Api) -> None:
    react = await api.remember(
        user_id="u1",
        content="Use React and Vite for the frontend",
        type="decision",
        subject="frontend framework",
    )
    nextjs = await api.remember(
        user_id="u1",
        content="We are switching to Next.js for the frontend",
        type="decision",
        subject="frontend framework",
    )
    assert nextjs["action"] == "superseded"
    assert nextjs["superseded"] == [react["memory"]["id"]]

    recall = await api.recall(user_id="u1", query="which frontend framework do we use?")
    assert "Next.js" in recall["context"]
    assert "React" not in recall["context"]
    assert [m["memory"]["id"] for m in recall["memories"]] == [nextjs["memory"]["id"]]

    history = (await api.get(f"/v1/memories/{react['memory']['id']}/history")).json()
    versions = {v["id"]: v for v in history["versions"]}
    old = versions[react["memory"]["id"]]
    assert old["status"] == "superseded"
    assert old["superseded_by"] == nextjs["memory"]["id"]
    assert old["valid_to"] is not None
    assert history["versions"][0]["id"] == nextjs["memory"]["id"]  # newest first
    superseded = [e for e in history["events"] if e["kind"] == "superseded"]
    assert superseded
    assert superseded[0]["details"]["successor"] == nextjs["memory"]["id"]
    assert superseded[0]["details"]["rule"] == "exact_slot"


async def test_generic_subject_is_not_a_slot_so_unrelated_facts_both_stay_active(api: Api) -> None:
    vegan = await api.remember(user_id="u1", content="I am vegan", type="constraint", subject="user")
    budget = await api.remember(
        user_id="u1", content="My dinner budget is 30 dollars", type="fact", subject="user"
    )
    # "user" names no slot; the slots the statements themselves name differ (app.memory.inferred).
    assert vegan["memory"]["subject"] == "diet"
    assert budget["memory"]["subject"] == "dinner budget"
    assert budget["action"] == "created"
    listing = (await api.get("/v1/memories", user_id="u1", status="active")).json()
    assert {m["content"] for m in listing["items"]} == {"I am vegan", "My dinner budget is 30 dollars"}
