"""Subject-less writes take the slot their content names (`app.memory.inferred`), through HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import Api

MONDAY = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


async def status(api: Api, memory_id: str) -> str:
    response = await api.get(f"/v1/memories/{memory_id}")
    assert response.status_code == 200
    return str(response.json()["status"])


async def turn(api: Api, content: str, at: datetime, **extra: Any) -> dict[str, Any]:
    """A raw conversation turn, as a transcript import writes it: episodic, no subject."""
    return await api.remember(
        user_id="u", content=content, type="episodic", observed_at=at.isoformat(), **extra
    )


async def test_a_raw_turn_is_superseded_by_a_later_change_of_the_same_attribute(api: Api) -> None:
    old = await turn(api, "user: I live in Porto.", MONDAY)
    new = await turn(api, "user: I moved to Lisbon last month.", MONDAY + timedelta(days=9))
    assert old["memory"]["subject"] == new["memory"]["subject"] == "home city"
    assert new["superseded"] == [old["memory"]["id"]]
    recalled = await api.recall(user_id="u", query="Which city do I live in?", token_budget=500)
    assert [m["memory"]["id"] for m in recalled["memories"]] == [new["memory"]["id"]]


async def test_a_correction_takes_the_slot_of_the_value_it_names_within_one_batch(api: Api) -> None:
    items = [
        {"user_id": "u", "content": "user: My favourite drink is coffee.", "type": "episodic"},
        {"user_id": "u", "content": "user: Actually, it's green tea, not coffee.", "type": "episodic"},
    ]
    response = await api.post("/v1/memories/batch", {"items": items})
    assert response.status_code == 201, response.text
    first, correction = response.json()["results"]
    assert correction["memory"]["subject"] == "drink"
    assert correction["superseded"] == [first["memory"]["id"]]


async def test_a_correction_takes_the_slot_of_a_stored_memory(api: Api) -> None:
    old = await turn(api, "I'm vegetarian.", MONDAY)
    fix = await turn(api, "Actually, it's vegan, not vegetarian.", MONDAY + timedelta(minutes=1))
    assert fix["superseded"] == [old["memory"]["id"]]
    assert await status(api, old["memory"]["id"]) == "superseded"


async def test_inferred_slots_keep_generic_subject_protection(api: Api) -> None:
    vegan = await api.remember(user_id="u", content="I am vegan", subject="user", type="constraint")
    budget = await api.remember(
        user_id="u", content="My budget is 30 dollars", subject="user", type="constraint"
    )
    assert budget["superseded"] == []
    changed = await api.remember(user_id="u", content="I'm vegetarian now", subject="me", type="constraint")
    assert changed["superseded"] == [vegan["memory"]["id"]]
    assert await status(api, budget["memory"]["id"]) == "active"


async def test_other_speakers_lines_never_take_a_slot(api: Api) -> None:
    caroline = await turn(api, "Caroline: I live in Boston.", MONDAY)
    melanie = await turn(api, "Melanie: I live in Paris.", MONDAY + timedelta(minutes=1))
    assert caroline["memory"]["subject"] is None
    assert melanie["superseded"] == []
    assert await status(api, caroline["memory"]["id"]) == "active"


async def test_a_given_subject_is_never_replaced_by_an_inferred_one(api: Api) -> None:
    given = await turn(api, "I live in Porto.", MONDAY, subject="winter home")
    assert given["memory"]["subject"] == "winter home"


async def test_a_statement_bounded_to_today_lapses_after_the_day(api: Api) -> None:
    today = await turn(api, "user: Temporary: I'm working from the library today.", MONDAY)
    assert today["memory"]["expires_at"] is not None
    assert datetime.fromisoformat(today["memory"]["expires_at"]) == datetime(2025, 3, 4, tzinfo=UTC)
    recalled = await api.recall(user_id="u", query="Where am I working from today?", token_budget=500)
    assert recalled["memories"] == []


async def test_an_explicit_expiry_wins_over_the_inferred_one(api: Api) -> None:
    later = datetime.now(UTC) + timedelta(days=30)
    kept = await turn(api, "I'm in Kyoto this week for a conference.", MONDAY, expires_at=later.isoformat())
    assert datetime.fromisoformat(kept["memory"]["expires_at"]) == later
