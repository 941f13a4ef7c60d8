"""Concurrent writes to one slot serialise on the advisory lock: exactly one survives as current."""

from __future__ import annotations

import asyncio

from tests.conftest import Api


async def test_fifty_concurrent_writes_to_one_slot_leave_one_active_and_forty_nine_superseded(
    api: Api,
) -> None:
    async def write(i: int) -> int:
        response = await api.post(
            "/v1/memories",
            {
                "user_id": "u",
                "content": f"The office plant is watered by person number {i}",
                "subject": "plant",
            },
        )
        return response.status_code

    statuses = await asyncio.gather(*(write(i) for i in range(50)))
    assert statuses == [201] * 50

    items = []
    cursor = None
    while True:
        params = {"user_id": "u", "limit": 500} | ({"cursor": cursor} if cursor else {})
        page = (await api.get("/v1/memories", **params)).json()
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    by_status: dict[str, int] = {}
    for m in items:
        by_status[m["status"]] = by_status.get(m["status"], 0) + 1
    assert len(items) == 50
    assert by_status == {"active": 1, "superseded": 49}
    # The chain is intact: every superseded memory points at a memory that exists.
    ids = {m["id"] for m in items}
    assert all(m["superseded_by"] in ids for m in items if m["status"] == "superseded")


async def test_concurrent_identical_writes_deduplicate_to_one_memory(api: Api) -> None:
    body = {"user_id": "u", "content": "I drink my coffee black"}
    responses = await asyncio.gather(*(api.post("/v1/memories", body) for _ in range(10)))
    actions = sorted(r.json()["action"] for r in responses)
    assert actions == ["created"] + ["deduplicated"] * 9
    stats = (await api.get("/v1/stats", user_id="u")).json()
    assert stats["total"] == 1
