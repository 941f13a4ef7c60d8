"""A memory's neighbours in its conversation lend it a share of their relevance: the answer to a question
shares no word with a later query about it, the turn that asked it does. Through the served app and
PostgreSQL: the neighbour is the same user's memory just before or after in the same session among the
live rows recall reads, never another user's, another tenant's or a forgotten one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.embeddings import HashEmbedder
from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import Api, NewTenant

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
QUERY = "which city did we pick for the offsite"
ASKED = "Which city did you pick for the offsite?"
ANSWER = "We booked Lisbon for everyone, flights on Friday."
# Newer than the answer and as far from the query: without its neighbour the answer ranks below it.
DISTRACTOR = "Booked the dentist for everyone on Monday."


def _at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


async def _remember(
    api: Api, content: str, minutes: float, session: str | None = "s1", user: str = "u"
) -> str:
    created = await api.remember(
        user_id=user, content=content, session_id=session, observed_at=_at(minutes), type="episodic"
    )
    memory_id: str = created["memory"]["id"]
    return memory_id


def _by_id(recalled: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["memory"]["id"]: m for m in recalled["memories"]}


async def _conversation(api: Api) -> tuple[str, str, str]:
    asked = await _remember(api, ASKED, 0)
    answer = await _remember(api, ANSWER, 2)
    distractor = await _remember(api, DISTRACTOR, 60, session=None)
    return asked, answer, distractor


async def test_the_answer_takes_a_share_of_the_question_turns_relevance(
    settings: Settings, new_tenant: NewTenant
) -> None:
    orders = {}
    for weight in (0.15, 0.0):
        app = create_app(settings.model_copy(update={"neighbour_weight": weight}), embedder=HashEmbedder())
        async with AsyncTestClient(app=app) as client:
            tenant_id, key = await new_tenant()
            api = Api(client, key, tenant_id)
            asked, answer, distractor = await _conversation(api)
            recalled = await api.recall(user_id="u", query=QUERY, min_relevance=0.0)
            found = _by_id(recalled)
            assert set(found) == {asked, answer, distractor}
            ranked = sorted(found, key=lambda i: -found[i]["score"])
            orders[weight] = [{asked: "asked", answer: "answer", distractor: "distractor"}[i] for i in ranked]
            if weight:
                share = (0.35 * found[asked]["components"]["semantic"]) + (
                    0.35 * found[asked]["components"]["keyword"]
                )
                assert found[answer]["components"]["neighbour"] == pytest.approx(share / 0.70, abs=1e-5)
                assert found[distractor]["components"]["neighbour"] == 0.0  # no session: no neighbour
    assert orders[0.15] == ["asked", "answer", "distractor"]
    assert orders[0.0] == ["asked", "distractor", "answer"]


async def test_a_neighbour_is_the_same_users_memory_in_the_same_tenant(
    settings: Settings, new_tenant: NewTenant
) -> None:
    async with AsyncTestClient(app=create_app(settings, embedder=HashEmbedder())) as client:
        tenant_id, key = await new_tenant()
        api = Api(client, key, tenant_id)
        other_tenant, other_key = await new_tenant()
        other = Api(client, other_key, other_tenant)
        asked = await _remember(api, ASKED, 0)
        # Between the question and its answer in time, in the same session name: another tenant's memory
        # of the same user id, and another user's. Neither stands between them.
        await _remember(other, "Porto, for the offsite", 1)
        await _remember(api, "Porto for the offsite city then", 1.2, user="v")
        answer = await _remember(api, ANSWER, 2)
        recalled = await api.recall(user_id="u", query=QUERY, min_relevance=0.0)
        found = _by_id(recalled)
        assert set(found) == {asked, answer}
        asked_c, answer_c = found[asked]["components"], found[answer]["components"]
        share = (0.35 * asked_c["semantic"] + 0.35 * asked_c["keyword"]) / 0.70
        assert share > 0.5
        assert answer_c["neighbour"] == pytest.approx(share, abs=1e-5)
        # Each is the other's neighbour: the question turn takes the answer's share too.
        assert asked_c["neighbour"] == pytest.approx(
            (0.35 * answer_c["semantic"] + 0.35 * answer_c["keyword"]) / 0.70, abs=1e-5
        )


async def test_a_forgotten_message_no_longer_stands_between_two_turns(api: Api) -> None:
    """Neighbours are live memories: once the message between the question and its answer is forgotten,
    the answer's neighbour before it is the question."""
    asked = await _remember(api, ASKED, 0)
    forgotten = await _remember(api, "Hold on, let me check the offsite options", 1)
    answer = await _remember(api, ANSWER, 2)
    before = _by_id(await api.recall(user_id="u", query=QUERY, min_relevance=0.0))
    forgotten_c = before[forgotten]["components"]
    forgotten_share = (0.35 * forgotten_c["semantic"] + 0.35 * forgotten_c["keyword"]) / 0.70
    assert before[answer]["components"]["neighbour"] == pytest.approx(forgotten_share, abs=1e-5)
    assert (await api.delete(f"/v1/memories/{forgotten}")).status_code == 200
    after = _by_id(await api.recall(user_id="u", query=QUERY, min_relevance=0.0))
    assert set(after) == {asked, answer}
    asked_c = after[asked]["components"]
    asked_share = (0.35 * asked_c["semantic"] + 0.35 * asked_c["keyword"]) / 0.70
    assert asked_share != pytest.approx(forgotten_share, abs=1e-3)
    assert after[answer]["components"]["neighbour"] == pytest.approx(asked_share, abs=1e-5)
