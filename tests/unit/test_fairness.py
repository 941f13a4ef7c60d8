"""Turns (app/lib/fairness.py): a worker's slots shared out between tenants, on a real event loop."""

from __future__ import annotations

import asyncio

import pytest

from app.lib.fairness import Turn, Turns


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _take(turns: Turns, who: str) -> Turn:
    turn = await turns.take(who, 1)
    assert turn is not None
    return turn


async def test_a_lone_tenant_gets_every_slot_and_then_waits() -> None:
    turns = Turns(2)
    first, _second = await _take(turns, "b"), await _take(turns, "b")
    assert turns.running == 2
    assert not turns.admits("b")
    assert await turns.take("b", 0.01) is None  # no slot freed in time
    first.release()
    first.release()  # idempotent: one slot back, not two
    assert turns.running == 1
    assert turns.admits("b")


async def test_a_second_active_tenant_halves_the_first_ones_share_and_goes_first() -> None:
    clock = Clock()
    turns = Turns(4, active_s=5, clock=clock)
    held = [await _take(turns, "b") for _ in range(4)]
    order: list[str] = []

    async def request(who: str) -> Turn:
        turn = await turns.take(who, 5)
        assert turn is not None
        order.append(who)
        return turn

    b_queue = [asyncio.create_task(request("b")) for _ in range(10)]
    await _settle()
    a_request = asyncio.create_task(request("a"))  # arrives after ten of b's
    await _settle()
    assert turns.waiting() == 11
    assert turns.cap() == 2

    held.pop().release()
    await _settle()
    assert order == ["a"]  # a has none in flight: first, though b queued first
    held.pop().release()
    await _settle()
    assert order == ["a"]  # b still holds 2, its share while a is active: the slot stays free for a
    (await a_request).release()
    await _settle()
    assert order == ["a"]  # a finished, but asked a moment ago: still active, b keeps to its share
    held.pop().release()
    await _settle()
    assert order == ["a", "b"]  # b back under its share: its oldest waiter

    clock.now += 6  # a asked nothing for longer than active_s: b alone again, every slot is its
    held.pop().release()
    await _settle()
    assert turns.cap() == 4
    assert order == ["a", "b", "b", "b", "b"]
    assert turns.running == 4

    pending = set(b_queue)
    while pending:  # every b request gets its turn as the ones before it finish
        finished = {task for task in pending if task.done()}
        for task in finished:
            task.result().release()
        pending -= finished
        await asyncio.sleep(0)
    assert order.count("b") == 10
    assert turns.running == 0
    assert turns.admits("b")


async def test_a_waiter_that_gives_up_or_is_cancelled_leaves_the_queue() -> None:
    turns = Turns(1)
    held = await _take(turns, "b")
    assert await turns.take("a", 0.01) is None
    cancelled = asyncio.create_task(turns.take("a", 5))
    await _settle()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert turns.waiting() == 0
    held.release()
    assert turns.running == 0


async def test_a_paused_turn_lets_another_tenant_work_and_is_taken_back_after() -> None:
    turns = Turns(1)
    turn = await _take(turns, "chat")
    model_answered = asyncio.Event()

    async def chat() -> None:
        async with turn.paused():  # waiting for a remote model
            await model_answered.wait()
        assert turn.held

    chatting = asyncio.create_task(chat())
    await _settle()
    other = await asyncio.wait_for(turns.take("other", 5), 1)  # the slot was handed back
    assert other is not None
    other.release()
    model_answered.set()
    await asyncio.wait_for(chatting, 1)
    assert turns.running == 1
    turn.release()
    assert turns.running == 0


def test_turns_need_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        Turns(0)
