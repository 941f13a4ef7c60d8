"""A standing rule that says when it applies ("... when I ask about meetings") reaches the questions about
its condition, and takes no room from the others when the embedder finds paraphrases; through the
served app and PostgreSQL (docs/RANKING.md, "Rules that say when they apply")."""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from app.embeddings import HashEmbedder
from app.lib.settings import Settings
from app.main import create_app
from tests.conftest import Api, NewTenant


class ParaphrasingHashEmbedder(HashEmbedder):
    """The hash embedder, declaring that its relevance means topic as a sentence model's does."""

    @property
    def paraphrases(self) -> bool:
        return True


MEETINGS = "Always give exact times when I ask about meetings"
FRENCH = "Always answer in French"
DEADLINE = "The scholarship deadline is May 15"


def _used(recall: dict[str, Any]) -> set[str]:
    return {m["memory"]["id"] for m in recall["memories"]}


async def _recalls(
    settings: Settings, new_tenant: NewTenant, embedder: HashEmbedder, *queries: str
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    async with AsyncTestClient(app=create_app(settings, embedder=embedder)) as client:
        tenant_id, key = await new_tenant()
        api = Api(client, key, tenant_id)
        ids = {
            content: (await api.remember(user_id="u", content=content, type=kind))["memory"]["id"]
            for content, kind in ((MEETINGS, "critical_rule"), (FRENCH, "critical_rule"), (DEADLINE, "fact"))
        }
        return ids, [await api.recall(user_id="u", query=q, token_budget=256) for q in queries]


async def test_a_conditional_rule_takes_no_room_from_a_question_about_something_else(
    settings: Settings, new_tenant: NewTenant
) -> None:
    ids, (scholarship, meetings) = await _recalls(
        settings,
        new_tenant,
        ParaphrasingHashEmbedder(),
        "when is the scholarship deadline?",
        "what time are my meetings tomorrow?",
    )
    # The unconditional rule still reaches a question that does not name it; the one about meetings
    # does not, and the trace says why.
    assert _used(scholarship) == {ids[FRENCH], ids[DEADLINE]}
    skipped = {s["id"]: s["reason"] for s in scholarship["trace"]["skipped"]}
    assert skipped[ids[MEETINGS]] == "budget"
    assert ids[MEETINGS] in _used(meetings)


async def test_with_the_hash_embedder_a_conditional_rule_keeps_the_whole_share(
    settings: Settings, new_tenant: NewTenant
) -> None:
    # Hashed words cannot tell a paraphrase of the condition from another topic: relevance 0 is no
    # evidence, so the rule enters within the share as before.
    ids, (scholarship,) = await _recalls(
        settings, new_tenant, HashEmbedder(), "when is the scholarship deadline?"
    )
    assert _used(scholarship) == {ids[MEETINGS], ids[FRENCH], ids[DEADLINE]}
