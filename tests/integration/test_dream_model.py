"""Dreaming with a model: the real `openai` SDK against a scripted OpenAI-compatible server on loopback.

The model's answer is untrusted input: ids it invents, ids of another user or tenant, and ids of
memories that are not live never reach a stored proposal.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from pydantic import SecretStr
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.settings import Settings
from tests.conftest import Api, NewTenant, running_client
from tests.integration.test_dream import COFFEE, COFFEE_AGAIN, decide, duplicates
from tests.support.scripted_openai import ScriptedOpenAI


@asynccontextmanager
async def with_model(
    settings: Settings, new_tenant: NewTenant, server: ScriptedOpenAI
) -> AsyncIterator[tuple[Api, Api]]:
    """Two tenants' views of an app whose chat model is the scripted server (embeddings stay local)."""
    online = settings.model_copy(
        update={
            "openai_base_url": server.base_url,
            "openai_api_key": SecretStr("sk-test-key-for-the-scripted-server-0002"),
            "chat_model": "scripted-chat",
            "model_max_retries": 0,
        }
    )
    (a_id, a_key), (b_id, b_key) = await new_tenant(), await new_tenant()
    async with running_client(online) as http:
        yield Api(http, a_key, a_id), Api(http, b_key, b_id)


def digest(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The memories the model was shown, by content."""
    lines = body["messages"][1]["content"].splitlines()[1:]
    return {entry["content"]: entry for entry in map(json.loads, lines)}


def answer(
    build: Callable[[dict[str, dict[str, Any]]], list[dict[str, Any]]],
) -> Callable[[dict[str, Any]], str]:
    """A scripted step: the proposals `build` makes from the digest, as the JSON object asked for."""
    return lambda body: json.dumps({"proposals": build(digest(body))})


async def dream(api: Api, user: str = "u") -> dict[str, Any]:
    response = await api.post("/v1/dream", {"user_id": user})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def stored_targets(owner_engine: AsyncEngine, tenant_id: uuid.UUID) -> set[str]:
    async with owner_engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": str(tenant_id)})
        rows = await conn.execute(
            text("SELECT unnest(target_ids)::text FROM dream_proposals WHERE tenant_id = :t"),
            {"t": tenant_id},
        )
        return {r[0] for r in rows}


def hostile(ids: dict[str, str], bad: dict[str, str], invented: str) -> list[dict[str, Any]]:
    """Three sound proposals among invented, foreign, dead and malformed ones."""
    return [
        {"kind": "merge", "target_ids": [ids["a"], ids["b"]], "content": COFFEE},
        {"kind": "merge", "target_ids": [ids["a"], invented], "content": "x"},
        {"kind": "merge", "target_ids": [ids["b"], bad["tenant"]], "content": "x"},
        {"kind": "forget", "target_ids": [bad["user"]]},
        {"kind": "forget", "target_ids": [bad["tenant"], invented]},
        {"kind": "resalience", "target_ids": [bad["archived"]], "salience": 0.2},
        {"kind": "supersede", "target_ids": [ids["c"], bad["user"]]},
        {"kind": "forget", "target_ids": [ids["c"], invented, bad["user"], "m-1"]},
        {"kind": "resalience", "target_ids": [ids["c"]], "salience": 0.9},
        {"kind": "merge"},
        {"kind": "erase_all", "target_ids": [ids["a"]]},
    ]


async def test_a_proposal_is_never_stored_with_an_id_outside_the_users_scope_or_not_active(
    settings: Settings, new_tenant: NewTenant, owner_engine: AsyncEngine
) -> None:
    with ScriptedOpenAI() as server:
        async with with_model(settings, new_tenant, server) as (api, other):
            a, b = await duplicates(api)
            c = (await api.remember(user_id="u", content="Lives in Porto", type="identity"))["memory"]
            archived = (await api.remember(user_id="u", content="Used to cycle to work"))["memory"]
            assert (await api.post(f"/v1/memories/{archived['id']}/archive")).status_code == 200
            other_user = (await api.remember(user_id="v", content="V drinks tea"))["memory"]
            other_tenant = (await other.remember(user_id="u", content="I drink coffee every day"))["memory"]
            ids = {"a": a["id"], "b": b["id"], "c": c["id"]}
            bad = {"archived": archived["id"], "user": other_user["id"], "tenant": other_tenant["id"]}

            server.script_chat([answer(lambda _: hostile(ids, bad, str(uuid.uuid4())))])
            result = await dream(api)
            assert result["mode"] == "model"
            assert (result["created"], result["dropped"]) == (3, 8)
            kinds = sorted((p["kind"], tuple(sorted(p["target_ids"]))) for p in result["proposals"])
            assert kinds == sorted(
                [
                    ("merge", tuple(sorted([ids["a"], ids["b"]]))),
                    ("forget", (ids["c"],)),
                    ("resalience", (ids["c"],)),
                ]
            )
            assert all(p["model"] == "scripted-chat" for p in result["proposals"])
            assert await stored_targets(owner_engine, api.tenant_id) <= set(ids.values())
            assert await stored_targets(owner_engine, other.tenant_id) == set()

            [call] = server.calls_to("chat/completions")
            shown = {entry["id"] for entry in digest(call.body).values()}
            assert shown == set(ids.values())  # never another user's, tenant's or a dead memory
            assert call.body["response_format"] == {"type": "json_object"}
            usage = (await api.get("/v1/usage", user_id="u")).json()
            assert usage["by_kind"]["dream"]["calls"] == 1


async def assert_points_to(api: Api, memory_id: str, successor: str) -> None:
    history = (await api.get(f"/v1/memories/{memory_id}/history")).json()
    assert history["versions"][0]["id"] == successor
    [event] = [e for e in history["events"] if e["kind"] == "superseded" and e["memory_id"] == memory_id]
    assert (event["details"]["successor"], event["details"]["rule"]) == (successor, "approved_proposal")
    assert event["details"]["proposed_by"] == "scripted-chat"


async def test_a_scripted_models_merge_is_recalled_in_place_of_the_duplicates_after_approval(
    settings: Settings, new_tenant: NewTenant
) -> None:
    with ScriptedOpenAI() as server:
        async with with_model(settings, new_tenant, server) as (api, _):
            a, b = await duplicates(api)
            await api.remember(user_id="u", content="Works at a bakery", type="fact")
            merged_text = "Drinks a coffee every morning"
            server.script_chat(
                [
                    answer(
                        lambda shown: [
                            {
                                "kind": "merge",
                                "target_ids": [shown[COFFEE]["id"], shown[COFFEE_AGAIN]["id"]],
                                "content": merged_text,
                                "importance": 0.7,
                                "rationale": "the same habit, said twice",
                            }
                        ]
                    )
                ]
            )
            [proposal] = (await dream(api))["proposals"]
            before = (await api.get("/v1/memories", user_id="u")).json()
            nothing = (await api.post("/v1/dream/apply", {"user_id": "u"})).json()
            assert (nothing["applied"], nothing["skipped"]) == (0, 1)
            assert (await api.get("/v1/memories", user_id="u")).json() == before

            await decide(api, proposal["id"], "approve")
            report = (await api.post("/v1/dream/apply", {"user_id": "u"})).json()
            assert (report["applied"], report["merged"]) == (1, 1)
            merged_id = report["results"][0]["memory_id"]
            merged = (await api.get(f"/v1/memories/{merged_id}")).json()
            assert (merged["content"], merged["source"], merged["source_model"]) == (
                merged_text,
                "dream",
                "scripted-chat",
            )
            assert merged["importance"] == 0.7

            recall = await api.recall(user_id="u", query="coffee every morning")
            assert [m["memory"]["id"] for m in recall["memories"]] == [merged_id]
            for duplicate in (a, b):
                await assert_points_to(api, duplicate["id"], merged_id)


async def test_a_model_supersede_once_approved_names_its_successor_and_rule(
    settings: Settings, new_tenant: NewTenant
) -> None:
    with ScriptedOpenAI() as server:
        async with with_model(settings, new_tenant, server) as (api, _):
            old = (await api.remember(user_id="u", content="Team standup is at 9am", type="fact"))["memory"]
            new = (await api.remember(user_id="u", content="Daily sync moved to half past ten", type="fact"))[
                "memory"
            ]
            server.script_chat(
                [answer(lambda _: [{"kind": "supersede", "target_ids": [old["id"], new["id"]]}])]
            )
            [proposal] = (await dream(api))["proposals"]
            await decide(api, proposal["id"], "approve")
            report = (await api.post("/v1/dream/apply", {"proposal_ids": [proposal["id"]]})).json()
            assert (report["applied"], report["superseded"]) == (1, 1)
            timeline = (await api.get("/v1/timeline", user_id="u")).json()["items"]
            [event] = [e for e in timeline if e["kind"] == "superseded"]
            assert event["memory_id"] == old["id"]
            assert event["details"]["successor"] == new["id"]
            assert (event["details"]["rule"], event["details"]["proposed_rule"]) == (
                "approved_proposal",
                "model",
            )
            recall = await api.recall(user_id="u", query="standup daily sync time")
            assert old["id"] not in [m["memory"]["id"] for m in recall["memories"]]


async def test_a_failing_or_rambling_model_degrades_to_the_offline_dreamer(
    settings: Settings, new_tenant: NewTenant
) -> None:
    with ScriptedOpenAI() as server:
        async with with_model(settings, new_tenant, server) as (api, _):
            a, b = await duplicates(api)
            server.fail_next(status=500)
            failed = await dream(api)
            assert failed["mode"] == "degraded"
            assert [set(p["target_ids"]) for p in failed["proposals"]] == [{a["id"], b["id"]}]
            server.script_chat(["I would merge the two coffee memories."])
            rambling = await dream(api)
            assert (rambling["mode"], rambling["created"]) == ("degraded", 0)
