"""How many SQL statements a remember costs, over HTTP, from authentication to commit.

The counts are a budget, not a measurement of speed: the write path asks each of its questions once for
a whole write (one statement per lookup, not one per item) and records the write's events in one
statement, so a batch of 100 costs about as many statements as one remember. Before the store was split
by question (issue 19) the same four requests cost 7 / 9 / 106 / 197 statements (the ORM inserted each
event on its own, and a superseding remember looked its target up again); a change that makes a lookup
or an event per item again fails here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Api
from tests.support.statements import statements_sent

# Statements of one request, from authentication to the last write (the commit is not a statement).
ONE_NEW = 7  # authenticate, lock, live twins, scope size, nearest, insert memory, insert events
ONE_SUPERSEDING = 6  # authenticate, lock, slot's current, retire the old, insert memory, insert events
BATCH_OF_100 = 7
BATCH_OF_100_INTO_SLOTS = 8  # + the slots' current memories


def counting(client: AsyncTestClient[Any]) -> AbstractContextManager[list[str]]:
    """Every statement the app's engine sends while the block runs (the test client is sequential)."""
    return statements_sent(client.app.state.engine)


async def seed(api: Api, user: str) -> None:
    """A scope that already holds memories, so every lookup has rows to look at."""
    items = [{"user_id": user, "content": f"Seeded fact number {i} about topic {i}"} for i in range(20)]
    items.append({"user_id": user, "content": "I prefer dark mode", "type": "preference", "subject": "theme"})
    response = await api.post("/v1/memories/batch", {"items": items})
    assert response.status_code == 201, response.text


async def test_one_remember_costs_no_more_statements_than_before(api: Api) -> None:
    await seed(api, "counted")
    with counting(api.client) as statements:
        created = await api.remember(user_id="counted", content="The build server is called hopper")
    assert created["action"] == "created"
    assert len(statements) <= ONE_NEW, statements

    with counting(api.client) as statements:
        result = await api.remember(
            user_id="counted", content="I prefer light mode", type="preference", subject="theme"
        )
    assert result["action"] == "superseded"
    assert len(statements) <= ONE_SUPERSEDING, statements


async def test_a_batch_of_100_costs_one_statement_per_lookup_not_per_item(api: Api) -> None:
    await seed(api, "batched")
    items = [{"user_id": "batched", "content": f"Batch fact {i}: the value is {i * 7}"} for i in range(100)]
    with counting(api.client) as statements:
        response = await api.post("/v1/memories/batch", {"items": items})
    assert response.status_code == 201, response.text
    assert [r["action"] for r in response.json()["results"]] == ["created"] * 100
    assert len(statements) <= BATCH_OF_100, statements

    slotted = [
        {
            "user_id": "batched",
            "content": f"Setting {i} is now value {i}",
            "type": "preference",
            "subject": f"setting {i % 10}",
        }
        for i in range(100)
    ]
    with counting(api.client) as statements:
        response = await api.post("/v1/memories/batch", {"items": slotted})
    assert response.status_code == 201, response.text
    actions = [r["action"] for r in response.json()["results"]]
    assert actions.count("superseded") == 90  # each of the 10 slots: created once, then superseded 9 times
    assert len(statements) <= BATCH_OF_100_INTO_SLOTS, statements


# Recall (the tests write reinforcement inside the request; the service does it in the background):
# authenticate, the scope's text statistics with its size (from its second recall in a process: its
# listing, app/store/terms.py, which gives those and the text half), candidates, reinforce.
ONE_RECALL = 4
ONE_RECALL_WITHOUT_WORDS = 4  # authenticate, the scope's size, candidates, reinforce


async def test_a_recall_of_a_small_scope_counts_it_once(api: Api) -> None:
    """The scope's listing counts its live rows, which is all the plan needs of a scope within the
    exact-scan limit: no separate count (each statement is a round trip, ~0.5-2 ms of a small recall)."""
    await seed(api, "recalled")
    for extra in (0, 1, 0):  # the second recall of a scope also reads its rows' terms (app/store/terms.py)
        with counting(api.client) as statements:
            response = await api.post(
                "/v1/recall", {"user_id": "recalled", "query": "which topic is fact 3 about"}
            )
        assert response.status_code == 200, response.status_code
        assert response.json()["memories"]
        assert len(statements) <= ONE_RECALL + extra, statements

    with counting(api.client) as statements:
        response = await api.post("/v1/recall", {"user_id": "recalled", "query": "?!"})
    assert response.status_code == 200, response.status_code
    assert len(statements) <= ONE_RECALL_WITHOUT_WORDS, statements
