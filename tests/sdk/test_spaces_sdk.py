"""The SDK's shared-space methods, sync and async, against the running app over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from engram_sdk import ForbiddenError, NotFoundError
from engram_sdk.models import Proposal, RecallResult, RememberResult, Space, SpaceGrant, SpaceList
from tests.support.sdk import run

PLAN = "The launch codename for the spring release is Bluebird"
QUERY = "what is the launch codename for the spring release?"


async def recalled(sdk: Any, agent: str) -> str:
    result: RecallResult = await run(sdk.recall("alice", QUERY, agent_id=agent, min_relevance=0.0))
    return result.context


async def test_a_promotion_through_the_sdk_reaches_the_granted_agent_once_approved(
    sdk: Any, other_sdk: Any
) -> None:
    space: Space = await run(sdk.create_space("launch-team", description="Spring launch"))
    assert (space.name, space.auto_approve, space.grants) == ("launch-team", False, [])
    for agent in ("agent-a", "agent-b"):
        grant: SpaceGrant = await run(sdk.grant_space("launch-team", agent))
        assert grant.can_propose
    mine: RememberResult = await run(sdk.remember("alice", PLAN, agent_id="agent-a"))
    assert PLAN not in await recalled(sdk, "agent-b")

    with pytest.raises(ForbiddenError):
        await run(sdk.propose_promotion("launch-team", mine.memory.id, "agent-z"))
    with pytest.raises(NotFoundError):
        await run(other_sdk.propose_promotion("launch-team", mine.memory.id, "agent-a"))
    proposal: Proposal = await run(sdk.propose_promotion("launch-team", mine.memory.id, "agent-a"))
    assert (proposal.kind, proposal.status) == ("promote", "proposed")
    assert PLAN not in await recalled(sdk, "agent-b")
    with pytest.raises(NotFoundError):
        await run(other_sdk.approve_proposal(proposal.id))
    approved: Proposal = await run(sdk.approve_proposal(proposal.id))
    assert approved.status == "applied"
    assert PLAN in await recalled(sdk, "agent-b")

    listed: SpaceList = await run(sdk.list_spaces())
    assert [g.agent_id for g in listed.items[0].grants] == ["agent-a", "agent-b"]
    assert (await run(other_sdk.list_spaces())).items == []
    revoked: SpaceGrant = await run(sdk.revoke_space("launch-team", "agent-b"))
    assert revoked.agent_id == "agent-b"
    assert PLAN not in await recalled(sdk, "agent-b")
