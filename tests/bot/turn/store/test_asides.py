"""Replies heard in a thread, taken by the next turn: each window once, the same window
again when a turn runs again."""

from __future__ import annotations

import pytest

from bot.process.state import State
from bot.state.redis.thread_key import ThreadKey

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

THREAD = ThreadKey("T1", "C1", "100.000001")


async def test_each_turn_takes_the_replies_since_the_previous_one(state: State) -> None:
    asides = state.threads.asides
    await asides.add(THREAD, "100.000002", "bob to carol")
    await asides.add(THREAD, "100.000003", "carol to bob")
    assert await asides.take(THREAD, "100.000004") == ["bob to carol", "carol to bob"]
    # The same turn run again (after a crash) takes the same replies.
    assert await asides.take(THREAD, "100.000004") == ["bob to carol", "carol to bob"]
    await asides.add(THREAD, "100.000005", "later")
    await asides.add(THREAD, "100.000007", "after the next turn's message")
    assert await asides.take(THREAD, "100.000006") == ["later"]
    assert await asides.take(THREAD, "100.000006") == ["later"]
    # Replies taken two turns ago are gone; a turn with nothing new takes nothing.
    members = await state.client.zrange(state.keys.asides(THREAD), 0, -1)
    assert members == ["later", "after the next turn's message"]
    assert await asides.take(THREAD, "100.000008") == ["after the next turn's message"]
    assert await asides.take(THREAD, "100.000009") == []


async def test_kept_per_thread_with_a_cap_and_an_expiry(state: State) -> None:
    asides = state.threads.asides
    asides.max_kept = 3
    for n in range(5):
        await asides.add(THREAD, f"200.00000{n}", f"m{n}")
    assert await asides.take(THREAD, "300.000000") == ["m2", "m3", "m4"]
    assert 0 < await state.client.ttl(state.keys.asides(THREAD)) <= asides.ttl_s
    assert await asides.take(ThreadKey("T1", "C1", "other"), "300.000000") == []
