"""The turn queue and thread locks on the real Redis: dedup across replicas, order, locks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bot.process.state import State
from bot.state.redis.errors import StateUnavailable
from bot.turn.model import QueuedTurn, Turn

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


def message(text: str, ts: str, *, event: str = "", thread: str = "100.1") -> Turn:
    return Turn("T1", "C1", thread, "U1", text, message_ts=ts, event_id=event or f"Ev{ts}")


async def test_enqueue_returns_an_id_and_keeps_the_thread_order(state: State) -> None:
    first = await state.threads.queue.enqueue(message("one", "100.1"))
    second = await state.threads.queue.enqueue(message("two", "100.2"))
    assert first and second and first < second
    thread = message("x", "0").thread_key
    assert await state.threads.queue.head(thread) == first
    entry = await state.threads.queue.fetch(first)
    assert isinstance(entry, QueuedTurn) and entry.turn.text == "one"


async def test_a_thread_runs_in_message_order_whatever_the_arrival_order(state: State) -> None:
    thread = message("x", "0").thread_key
    late = await state.threads.queue.enqueue(message("m2", "100.2"))
    first = await state.threads.queue.enqueue(message("m1", "100.1"))  # redelivered late by Slack
    third = await state.threads.queue.enqueue(message("m3", "100.3"))
    assert late and first and third
    assert await state.threads.queue.head(thread) == first
    await state.threads.queue.forget(thread, first)
    assert await state.threads.queue.head(thread) == late
    # A turn that has started stays first, even when an older message arrives meanwhile.
    await state.client.set(state.keys.thread_current(thread), third)
    assert await state.threads.queue.head(thread) == third


async def test_duplicates_by_event_id_and_by_message_ts(state: State) -> None:
    assert await state.threads.queue.enqueue(message("hi", "100.1", event="Ev1"))
    # A retry of the same event.
    assert await state.threads.queue.enqueue(message("hi", "100.1", event="Ev1")) is None
    # The app_mention event of the same message: another event id, the same ts.
    assert await state.threads.queue.enqueue(message("hi", "100.1", event="Ev2")) is None
    # A new message.
    assert await state.threads.queue.enqueue(message("hi again", "100.2", event="Ev3"))
    assert await state.client.zcard(state.keys.thread_queue(message("", "").thread_key)) == 2


async def test_concurrent_duplicates_from_two_replicas_make_one_turn(
    make_state: Callable[..., State],
) -> None:
    replica_a, replica_b = make_state(), make_state()
    turn = message("hello", "200.1", event="EvDup")
    results = await asyncio.gather(
        *[(replica_a if n % 2 else replica_b).threads.queue.enqueue(turn) for n in range(40)]
    )
    assert len([r for r in results if r]) == 1
    assert (await replica_a.threads.queue.depth())[0] == 1


async def test_enqueue_with_redis_down_is_a_typed_error(make_state: Callable[..., State]) -> None:
    down = make_state("redis://127.0.0.1:9/0")
    with pytest.raises(StateUnavailable, match="Redis is unreachable"):
        await down.threads.queue.enqueue(message("lost?", "300.1"))


async def test_read_claim_and_finish(state: State) -> None:
    await state.threads.queue.ensure_group()
    entry_id = await state.threads.queue.enqueue(message("work", "400.1"))
    [entry] = await state.threads.queue.read("w1", 10, 0)
    assert isinstance(entry, QueuedTurn)
    read_id, turn = entry.entry_id, entry.turn
    assert read_id == entry_id and turn is not None
    assert await state.threads.queue.read("w2", 10, 0) == []
    await asyncio.sleep(0.05)
    [entry] = await state.threads.queue.claim_stale("w2", 10)
    assert isinstance(entry, QueuedTurn)
    claimed_id = entry.entry_id
    assert claimed_id == entry_id
    async with state.client.pipeline(transaction=True) as pipe:
        state.threads.queue.finish(pipe, turn.thread_key, entry_id)
        await pipe.execute()
    assert await state.threads.queue.pending_count() == 0
    assert await state.threads.queue.fetch(entry_id) is None
    assert await state.threads.queue.head(turn.thread_key) is None


async def test_a_lost_group_is_recreated(state: State) -> None:
    await state.threads.queue.ensure_group()
    await state.client.delete(state.keys.turns(0))
    assert await state.threads.queue.read("w1", 10, 0) == []
    await state.threads.queue.enqueue(message("after", "500.1"))
    assert len(await state.threads.queue.read("w1", 10, 0)) == 1


async def test_a_mention_joins_its_thread_in_the_same_step_as_it_is_queued(state: State) -> None:
    await state.threads.queue.ensure_group()
    thread = message("x", "0", thread="300.1").thread_key
    joined = state.keys.participation(thread)
    first = await state.threads.queue.enqueue(
        message("m1", "300.1", thread="300.1"), join_ttl_s=600
    )
    assert first is not None
    assert await state.threads.participation.joined(thread)
    assert 590 <= await state.client.ttl(joined) <= 600
    second = await state.threads.queue.enqueue(
        message("m2", "300.2", thread="300.1"), join_ttl_s=600
    )
    assert second is not None
    # The first turn is the bot's first in the thread; the second is not.
    entries = {
        entry.entry_id: entry.turn
        for entry in await state.threads.queue.read("w1", 10, 0)
        if isinstance(entry, QueuedTurn)
    }
    started, followed = entries[first], entries[second]
    assert started is not None and started.new_thread
    assert followed is not None and not followed.new_thread
    # A duplicate is not queued again, and still keeps the thread joined (its TTL renewed).
    await state.client.expire(joined, 5)
    again = message("m1", "300.1", thread="300.1")
    assert await state.threads.queue.enqueue(again, join_ttl_s=600) is None
    assert await state.client.ttl(joined) > 5
