"""Every SDK operation, sync and async (the `mode` fixture), against the running app over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from engram_sdk import ForgetFilter, Message, NewMemory, NotFoundError
from engram_sdk.models import (
    ChatResult,
    EraseReceipt,
    Event,
    ExportDocument,
    History,
    Memory,
    Page,
    Proposal,
    RecallResult,
    RememberResult,
)
from tests.support.sdk import collect, run

REACT = "Use React and Vite for the frontend"
NEXT = "We are switching to Next.js for the frontend"


async def remember(sdk: Any, content: str, **fields: Any) -> RememberResult:
    result: RememberResult = await run(sdk.remember("alice", content, **fields))
    return result


async def test_frontend_case_supersedes_recalls_the_current_fact_and_keeps_the_history(sdk: Any) -> None:
    react = await remember(sdk, REACT, type="decision", subject="frontend framework")
    nextjs = await remember(sdk, NEXT, type="decision", subject="frontend framework")
    assert (react.action, nextjs.action) == ("created", "superseded")
    assert nextjs.superseded == [react.memory.id]

    recalled: RecallResult = await run(
        sdk.recall("alice", "which frontend framework do we use?", token_budget=256)
    )
    assert "Next.js" in recalled.context
    assert "React" not in recalled.context
    assert [m.memory.id for m in recalled.memories] == [nextjs.memory.id]
    assert recalled.tokens_used <= 256
    assert recalled.trace is not None
    assert [i.id for i in recalled.trace.included] == [nextjs.memory.id]

    old: Memory = await run(sdk.get_memory(react.memory.id))
    assert (old.status, old.superseded_by) == ("superseded", nextjs.memory.id)
    assert old.valid_to is not None
    history: History = await run(sdk.history(str(react.memory.id)))  # ids as strings work too
    assert [v.id for v in history.versions] == [nextjs.memory.id, react.memory.id]
    assert {e.kind for e in history.events} >= {"created", "superseded"}


async def test_a_batch_is_listed_page_by_page_and_iterated_across_pages(sdk: Any) -> None:
    items = [NewMemory("bob", f"Bob's fact number {i}", type="fact", subject=f"fact {i}") for i in range(7)]
    items.append(NewMemory("bob", "Bob prefers window seats", type="preference"))
    batch = await run(sdk.remember_batch(items))
    assert [r.action for r in batch.results] == ["created"] * 8

    first: Page[Memory] = await run(sdk.list_memories("bob", limit=3))
    assert len(first.items) == 3
    assert first.next_cursor is not None
    second: Page[Memory] = await run(sdk.list_memories("bob", limit=3, cursor=first.next_cursor))
    assert not {m.id for m in first.items} & {m.id for m in second.items}

    every = await collect(sdk.iter_memories("bob", limit=3))
    assert len(every) == 8
    assert {m.id for m in every} == {r.memory.id for r in batch.results}
    preferences = await collect(sdk.iter_memories("bob", type="preference"))
    assert [m.content for m in preferences] == ["Bob prefers window seats"]
    assert await collect(sdk.iter_memories("nobody")) == []


async def test_update_and_state_changes(sdk: Any) -> None:
    memory = (await remember(sdk, "The office is in Porto", subject="office city")).memory
    updated: Memory = await run(
        sdk.update_memory(memory.id, content="The office is in Braga", importance=0.9, tags=["work"])
    )
    assert (updated.content, updated.importance, updated.tags) == ("The office is in Braga", 0.9, ["work"])
    assert updated.subject == "office city"  # fields not given are not sent, so they do not change
    cleared: Memory = await run(sdk.update_memory(memory.id, subject=None))
    assert cleared.subject is None

    assert (await run(sdk.pin_memory(memory.id))).status == "pinned"
    assert (await run(sdk.unpin_memory(memory.id))).status == "active"
    assert (await run(sdk.archive_memory(memory.id))).status == "archived"
    assert (await run(sdk.restore_memory(memory.id))).status == "active"


async def test_forget_by_each_selector_then_delete_and_erase(sdk: Any) -> None:
    by_subject = (await remember(sdk, "My car is a Mazda", subject="car")).memory
    by_query = (await remember(sdk, "I play the cello on Sundays", type="episodic")).memory
    by_filter = (await remember(sdk, "Buy milk", type="task")).memory
    by_id = (await remember(sdk, "My locker code is stored elsewhere", subject="locker")).memory
    deleted = (await remember(sdk, "The wifi is slow upstairs", subject="wifi")).memory
    erased = (await remember(sdk, "My dentist is Dr. Silva", subject="dentist")).memory

    assert (await run(sdk.forget("alice", subject="car"))).forgotten == [by_subject.id]
    assert (await run(sdk.forget("alice", query="I play the cello on Sundays"))).forgotten == [by_query.id]
    assert (await run(sdk.forget("alice", filter=ForgetFilter(type="task")))).forgotten == [by_filter.id]
    assert (await run(sdk.forget("alice", memory_id=by_id.id))).forgotten == [by_id.id]
    assert (await run(sdk.delete_memory(deleted.id))).forgotten == [deleted.id]
    assert (await run(sdk.get_memory(deleted.id))).status == "forgotten"  # soft: still readable

    receipt: EraseReceipt = await run(sdk.erase_memory(erased.id))
    assert receipt.memories == 1
    with pytest.raises(NotFoundError):
        await run(sdk.get_memory(erased.id))
    stats = await run(sdk.stats(user_id="alice"))
    assert (stats.total, stats.by_status) == (5, {"forgotten": 5})


async def test_stats_and_the_timeline_page_by_page(sdk: Any) -> None:
    for i in range(3):
        await remember(sdk, f"Alice visited city number {i}", type="episodic")
    stats = await run(sdk.stats())
    assert (stats.total, stats.by_type, stats.mismatched) == (3, {"episodic": 3}, 0)
    page: Page[Event] = await run(sdk.timeline("alice", limit=2))
    assert len(page.items) == 2
    assert page.next_cursor is not None
    events = await collect(sdk.iter_timeline("alice", limit=2))
    assert [e.kind for e in events] == ["created"] * 3
    assert events == sorted(events, key=lambda e: (e.created_at, e.id), reverse=True)


async def test_chat_extract_and_usage(sdk: Any) -> None:
    chat: ChatResult = await run(sdk.chat("carol", "I prefer dark mode", session_id="s1"))
    assert chat.mode == "offline"
    assert [c.name for c in chat.tool_calls] == ["remember"]
    answer: ChatResult = await run(sdk.chat("carol", "What theme do I like?", session_id="s2"))
    assert "dark mode" in answer.answer
    assert answer.memories_used

    extracted = await run(
        sdk.extract(
            "carol",
            [Message("user", "I live in Lisbon"), Message("assistant", "Noted!")],
            session_id="s3",
        )
    )
    [created] = [a.memory for a in extracted.actions if a.action == "created"]
    assert ("Lisbon" in created.content, created.source) == (True, "extract")

    usage = await run(sdk.usage(user_id="carol"))
    assert "chat" in usage.by_kind
    assert usage.total.calls == sum(t.calls for t in usage.by_kind.values())
    assert usage.total.total_tokens >= chat.usage.total_tokens + answer.usage.total_tokens > 0
    assert (await run(sdk.usage(since=datetime.now(UTC) + timedelta(hours=1)))).total.calls == 0


async def test_export_import_markdown_and_reembed(sdk: Any, other_sdk: Any) -> None:
    react = await remember(sdk, REACT, type="decision", subject="frontend framework")
    await remember(sdk, NEXT, type="decision", subject="frontend framework")
    document: ExportDocument = await run(sdk.export(user_id="alice"))
    assert len(document.memories) == 2
    assert all(m.embedding for m in document.memories)

    markdown: str = await run(sdk.export_markdown(user_id="alice"))
    assert "Next.js" in markdown
    assert f"~~{REACT}~~" in markdown  # superseded is struck through

    imported = await run(other_sdk.import_document(document))
    assert (imported.imported, imported.deduplicated) == (2, 0)
    again = await run(other_sdk.import_document(msgspec.json.encode(document)))  # raw bytes work too
    assert (again.imported, again.deduplicated) == (0, 2)
    copied: Memory = await run(other_sdk.get_memory(react.memory.id))
    assert (copied.content, copied.status) == (REACT, "superseded")
    recalled = await run(other_sdk.recall("alice", "which frontend framework?"))
    assert "Next.js" in recalled.context

    reembedded = await run(other_sdk.reembed())
    assert (reembedded.reembedded, reembedded.remaining) == (0, 0)  # same model: nothing mismatched


async def test_erase_a_user_by_path_and_by_body(sdk: Any) -> None:
    await remember(sdk, "Alice likes tea", type="preference")
    await run(sdk.remember("team/dave", "Dave likes coffee", type="preference"))
    by_path: EraseReceipt = await run(sdk.erase_user("alice"))
    assert (by_path.user_id, by_path.memories) == ("alice", 1)
    by_body: EraseReceipt = await run(sdk.erase("team/dave"))  # a '/' cannot travel in a path segment
    assert (by_body.user_id, by_body.memories) == ("team/dave", 1)
    assert (await run(sdk.stats())).total == 0


async def test_dream_propose_review_and_apply(sdk: Any) -> None:
    coffee = await remember(sdk, "I drink coffee every morning", type="preference", subject="coffee")
    again = await remember(sdk, "Every morning I drink coffee", type="preference", subject="morning routine")
    dreamt = await run(sdk.dream("alice"))
    assert dreamt.mode == "offline"
    [merge] = [p for p in dreamt.proposals if p.kind == "merge"]
    assert set(merge.target_ids) == {coffee.memory.id, again.memory.id}

    listed = await collect(sdk.iter_proposals("alice", status="proposed", limit=1))
    assert merge.id in {p.id for p in listed}
    page = await run(sdk.list_proposals("alice", limit=1))
    assert len(page.items) == 1

    others = [p for p in listed if p.id != merge.id]
    for proposal in others:
        assert (await run(sdk.reject_proposal(proposal.id))).status == "rejected"
    approved: Proposal = await run(sdk.approve_proposal(merge.id))
    assert approved.status == "approved"
    report = await run(sdk.apply_proposals(proposal_ids=[merge.id]))
    assert (report.applied, report.merged, report.stale) == (1, 1, 0)
    assert [(r.id, r.status) for r in report.results] == [(merge.id, "applied")]
    assert (await run(sdk.get_memory(coffee.memory.id))).status == "superseded"


async def test_health_and_readiness(sdk: Any) -> None:
    assert (await run(sdk.health())).status == "ok"
    ready = await run(sdk.ready())
    assert ready.ready
    assert ready.migration


async def test_another_tenant_sees_nothing_through_the_sdk(sdk: Any, other_sdk: Any) -> None:
    memory = (await remember(sdk, "Alice's secret project is Falcon", subject="secret project")).memory
    dreamt = await run(sdk.dream("alice"))
    assert dreamt.proposals == []  # one memory: nothing to consolidate, so make a proposal to probe
    await remember(sdk, "Alice's secret project is called Falcon", subject="project codename")
    [proposal] = (await run(sdk.dream("alice"))).proposals
    calls = [
        lambda: other_sdk.get_memory(memory.id),
        lambda: other_sdk.history(memory.id),
        lambda: other_sdk.pin_memory(memory.id),
        lambda: other_sdk.update_memory(memory.id, content="changed"),
        lambda: other_sdk.delete_memory(memory.id),
        lambda: other_sdk.erase_memory(memory.id),
        lambda: other_sdk.approve_proposal(proposal.id),
        lambda: other_sdk.reject_proposal(proposal.id),
    ]
    for call in calls:  # lambdas: the sync client raises when called, not when awaited
        with pytest.raises(NotFoundError):
            await run(call())
    assert await collect(other_sdk.iter_memories("alice")) == []
    assert "Falcon" not in (await run(other_sdk.recall("alice", "secret project"))).context
    assert (await run(other_sdk.export(user_id="alice"))).memories == []
    assert (await run(other_sdk.erase_user("alice"))).memories == 0
    assert (await run(sdk.get_memory(memory.id))).content == "Alice's secret project is Falcon"
    assert (await run(sdk.reject_proposal(proposal.id))).status == "rejected"  # still there, undecided
