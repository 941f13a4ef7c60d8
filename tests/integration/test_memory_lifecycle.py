"""Write-path rules and memory management through HTTP."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.conftest import Api


async def test_same_content_twice_reinforces_instead_of_duplicating(api: Api) -> None:
    first = await api.remember(user_id="u", content="I drink oat milk", subject="milk", type="preference")
    again = await api.remember(user_id="u", content="i drink oat milk.", subject="Milk", type="preference")
    assert again["action"] == "deduplicated"
    assert again["memory"]["id"] == first["memory"]["id"]
    assert (await api.memory(first["memory"]["id"]))["access_count"] == 1


async def test_near_identical_statement_supersedes_semantically(api: Api) -> None:
    old = await api.remember(
        user_id="u", content="The staging database runs on a small instance", type="fact"
    )
    new = await api.remember(
        user_id="u", content="The staging database runs on a small instance now", type="fact"
    )
    assert new["action"] == "superseded"
    assert new["superseded"] == [old["memory"]["id"]]
    history = (await api.get(f"/v1/memories/{old['memory']['id']}/history")).json()
    event = next(e for e in history["events"] if e["kind"] == "superseded")
    assert event["details"]["rule"] == "semantic_cosine"
    assert event["details"]["cosine"] >= 0.9


async def test_critical_rule_is_never_silently_superseded(api: Api) -> None:
    rule = await api.remember(
        user_id="u", content="Never push to main without review", type="critical_rule", subject="git workflow"
    )
    change = await api.remember(
        user_id="u", content="Pushing to main directly is fine", type="critical_rule", subject="git workflow"
    )
    assert change["action"] == "created"
    assert change["superseded"] == []
    assert len(change["proposals"]) == 1
    assert (await api.memory(rule["memory"]["id"]))["status"] == "active"


async def test_pinned_memory_is_never_silently_superseded(api: Api) -> None:
    pinned = await api.remember(user_id="u", content="Timezone is CET", subject="timezone", pinned=True)
    later = await api.remember(user_id="u", content="Timezone is PST", subject="timezone")
    assert later["proposals"]
    assert (await api.memory(pinned["memory"]["id"]))["status"] == "pinned"


async def test_secrets_are_redacted_before_storage(api: Api, owner_engine: AsyncEngine) -> None:
    secret = "sk-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
    result = await api.remember(user_id="u", content=f"The deploy key is {secret} keep it safe")
    assert result["redacted"] is True
    assert secret not in result["memory"]["content"]
    async with owner_engine.connect() as conn:
        hits = (
            await conn.execute(
                text("SELECT count(*) FROM memories WHERE content LIKE :s"), {"s": f"%{secret}%"}
            )
        ).scalar_one()
    assert hits == 0


async def test_pin_unpin_archive_restore_round_trip_with_events(api: Api) -> None:
    created = await api.remember(user_id="u", content="Weekly sync is on Mondays")
    mid = created["memory"]["id"]
    assert (await api.post(f"/v1/memories/{mid}/pin")).json()["status"] == "pinned"
    assert (await api.post(f"/v1/memories/{mid}/unpin")).json()["status"] == "active"
    assert (await api.post(f"/v1/memories/{mid}/archive")).json()["status"] == "archived"
    recall = await api.recall(user_id="u", query="weekly sync mondays")
    assert recall["memories"] == []
    assert (await api.post(f"/v1/memories/{mid}/restore")).json()["status"] == "active"
    kinds = [e["kind"] for e in (await api.get(f"/v1/memories/{mid}/history")).json()["events"]]
    assert kinds == ["restored", "archived", "unpinned", "pinned", "created"]


async def test_restore_of_superseded_memory_is_refused_while_its_successor_is_current(api: Api) -> None:
    old = await api.remember(user_id="u", content="Editor is vim", subject="editor", type="preference")
    new = await api.remember(user_id="u", content="Editor is helix", subject="editor", type="preference")
    refused = await api.post(f"/v1/memories/{old['memory']['id']}/restore")
    assert refused.status_code == 409
    assert refused.json()["error"] == "conflict"
    await api.delete(f"/v1/memories/{new['memory']['id']}")
    assert (await api.post(f"/v1/memories/{old['memory']['id']}/restore")).json()["status"] == "active"


async def test_patch_changes_content_and_re_embeds(api: Api) -> None:
    created = await api.remember(user_id="u", content="Standup at 9am")
    patched = await api.patch(
        f"/v1/memories/{created['memory']['id']}", {"content": "Standup at 10am", "importance": 0.9}
    )
    assert patched.status_code == 200
    assert patched.json()["content"] == "Standup at 10am"
    recall = await api.recall(user_id="u", query="standup 10am")
    assert "10am" in recall["context"]


async def test_forget_by_subject_query_and_filter(api: Api) -> None:
    theme = await api.remember(user_id="u", content="I like dark mode", subject="theme", type="preference")
    by_subject = (await api.post("/v1/forget", {"user_id": "u", "subject": "Theme"})).json()
    assert by_subject["forgotten"] == [theme["memory"]["id"]]

    city = await api.remember(user_id="u", content="My favourite city is Kyoto")
    by_query = (await api.post("/v1/forget", {"user_id": "u", "query": "my favourite city is Kyoto"})).json()
    assert by_query["forgotten"] == [city["memory"]["id"]]

    await api.remember(user_id="u", content="Bought milk today", type="episodic")
    kept = await api.remember(user_id="u", content="Allergic to peanuts", type="constraint")
    by_filter = (await api.post("/v1/forget", {"user_id": "u", "filter": {"type": "episodic"}})).json()
    assert len(by_filter["forgotten"]) == 1
    assert (await api.memory(kept["memory"]["id"]))["status"] == "active"
    recall = await api.recall(user_id="u", query="dark mode kyoto milk", min_relevance=0)
    assert "dark mode" not in recall["context"]
    assert "Kyoto" not in recall["context"]
    assert "milk" not in recall["context"]


async def test_forget_by_query_forgets_nothing_when_nothing_is_close(api: Api) -> None:
    await api.remember(user_id="u", content="My favourite colour is teal")
    result = (
        await api.post("/v1/forget", {"user_id": "u", "query": "kubernetes cluster autoscaling"})
    ).json()
    assert result["forgotten"] == []


async def test_erase_one_memory_removes_its_content_everywhere(api: Api, owner_engine: AsyncEngine) -> None:
    created = await api.remember(user_id="u", content="Passport number is XJ-4471-Q")
    mid = created["memory"]["id"]
    receipt = (await api.delete(f"/v1/memories/{mid}", erase="true")).json()
    assert receipt["memories"] == 1
    assert (await api.get(f"/v1/memories/{mid}")).status_code == 404
    async with owner_engine.connect() as conn:
        rows = (
            await conn.execute(
                text("SELECT count(*) FROM memories WHERE content LIKE '%XJ-4471-Q%'"),
            )
        ).scalar_one()
        events = (
            await conn.execute(
                text("SELECT count(*) FROM memory_events WHERE details::text LIKE '%XJ-4471-Q%'"),
            )
        ).scalar_one()
    assert rows == 0
    assert events == 0


async def test_stats_count_by_status_and_type(api: Api) -> None:
    await api.remember(user_id="u", content="Likes jazz", subject="music", type="preference")
    await api.remember(user_id="u", content="Likes techno", subject="music", type="preference")
    await api.remember(user_id="u", content="Lives in Oslo", type="identity")
    stats = (await api.get("/v1/stats", user_id="u")).json()
    assert stats["total"] == 3
    assert stats["by_status"] == {"active": 2, "superseded": 1}
    assert stats["by_type"] == {"preference": 2, "identity": 1}
    assert stats["embed_model"] == "hash-v1-384"
    assert stats["mismatched"] == 0


async def test_list_paginates_with_an_opaque_cursor(api: Api) -> None:
    items = [{"user_id": "u", "content": f"numbered fact {i} about topic {i * 7}"} for i in range(7)]
    assert (await api.post("/v1/memories/batch", {"items": items})).status_code == 201
    seen: list[str] = []
    cursor = None
    while True:
        params = {"user_id": "u", "limit": 3} | ({"cursor": cursor} if cursor else {})
        page = (await api.get("/v1/memories", **params)).json()
        seen += [m["id"] for m in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 7


async def test_recall_keeps_the_critical_rule_while_its_replacement_awaits_approval(api: Api) -> None:
    await api.remember(
        user_id="u", content="Never deploy on Fridays", type="critical_rule", subject="deploy days"
    )
    pending = await api.remember(
        user_id="u", content="Deploy any day you like", type="critical_rule", subject="deploy days"
    )
    assert pending["proposals"]
    recall = await api.recall(user_id="u", query="can I deploy on friday?", min_relevance=0)
    assert "Never deploy on Fridays" in recall["context"]
    assert "any day" not in recall["context"]
