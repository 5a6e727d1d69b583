"""Thread leases on the real Redis: owner token, TTL, heartbeat, loss, hand back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bot.process.state import State
from bot.turn.model import QueuedTurn, Turn
from bot.turn.store.lease import Aborted
from tests.fakes.redis_server import PrivateRedis
from tests.waiting import until, until_true


def message(text: str, ts: str, *, event: str = "", thread: str = "100.1") -> Turn:
    return Turn("T1", "C1", thread, "U1", text, message_ts=ts, event_id=event or f"Ev{ts}")


@pytest.mark.cluster
async def test_thread_lock_owner_token_and_ttl(make_state: Callable[..., State]) -> None:
    state = make_state(queue={"lock_ttl_s": 1.5})
    thread = message("", "").thread_key
    lock = await state.threads.locks.try_acquire(thread, "w1")
    assert lock is not None
    assert await state.threads.locks.try_acquire(thread, "w1") is None
    assert await lock.renew()
    # Only the owner releases it.
    other = await state.client.get(state.keys.lock(thread))
    assert other == lock.token
    await state.client.set(state.keys.lock(thread), "someone-else")
    assert not await lock.release()
    assert await state.client.get(state.keys.lock(thread)) == "someone-else"
    await state.client.delete(state.keys.lock(thread))
    # A dead owner's lock frees itself.
    orphan = await state.threads.locks.try_acquire(thread, "w1")
    assert orphan is not None
    await asyncio.sleep(1.7)
    assert await state.threads.locks.try_acquire(thread, "w1") is not None


@pytest.mark.cluster
async def test_a_kept_alive_lock_outlives_its_ttl_and_reports_loss(
    make_state: Callable[..., State],
) -> None:
    state = make_state(queue={"lock_ttl_s": 1.2})
    thread = message("", "").thread_key
    lock = await state.threads.locks.try_acquire(thread, "w1")
    assert lock is not None
    async with lock.kept_alive() as lost:
        await asyncio.sleep(2.0)  # longer than the TTL: renewals kept it
        assert not lost.is_set()
        assert await state.client.get(state.keys.lock(thread)) == lock.token
        await state.client.set(state.keys.lock(thread), "thief")
        await asyncio.wait_for(lost.wait(), 3)
    assert await lock.release() is False


@pytest.mark.cluster
async def test_the_heartbeat_keeps_a_live_turn_from_being_claimed(
    make_state: Callable[..., State],
) -> None:
    state = make_state(queue={"lock_ttl_s": 1.2})
    await state.threads.queue.ensure_group()
    entry_id = await state.threads.queue.enqueue(message("long", "800.1", thread="800.1"))
    assert entry_id
    [entry] = await state.threads.queue.read("owner", 10, 0)
    assert isinstance(entry, QueuedTurn)
    turn = entry.turn
    loop = asyncio.get_running_loop()
    read_at = loop.time()  # the entry has been pending at least this long
    assert turn is not None
    lease = await state.threads.locks.try_acquire(turn.thread_key, "owner")
    assert lease is not None
    lease.entry = entry_id
    async with lease.kept_alive() as lost:

        async def refreshed_past_the_idle_time() -> bool:
            """Pending longer than the idle time another worker waits for (1 s), yet idle
            for less: the heartbeat has refreshed the entry since."""
            [pending] = await state.client.xpending_range(
                state.threads.queue.stream_of(entry_id),
                state.keys.workers,
                min="-",
                max="+",
                count=1,
            )
            idle_ms = int(pending["time_since_delivered"])
            return loop.time() - read_at > 1.1 and idle_ms < 800

        await until_true(refreshed_past_the_idle_time, 5)
        assert await state.threads.queue.claim_stale("thief", 1000) == []
        assert not lost.is_set() and lease.valid()
    # Handed back: claimable at once, and the lock is free.
    await lease.hand_back()
    assert not lease.valid()
    [entry] = await state.threads.queue.claim_stale("next", 1000)
    assert isinstance(entry, QueuedTurn)
    claimed_id = entry.entry_id
    assert claimed_id == entry_id
    assert await state.threads.locks.try_acquire(turn.thread_key, "next") is not None


@pytest.mark.cluster
async def test_a_lease_not_renewed_in_time_is_no_longer_trusted(
    make_state: Callable[..., State],
) -> None:
    state = make_state(queue={"lock_ttl_s": 1.2})
    lease = await state.threads.locks.try_acquire(message("", "").thread_key, "w1")
    assert lease is not None and lease.valid()
    await asyncio.sleep(1.0)  # past 80 % of the TTL without a heartbeat
    assert not lease.valid()
    assert lease.lost.is_set()


async def test_a_lease_whose_renewal_hangs_is_lost_on_time(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url, queue={"lock_ttl_s": 1.2})
    lease = await state.threads.locks.try_acquire(message("", "").thread_key, "w1")
    assert lease is not None
    async with lease.kept_alive() as lost:
        private_redis.pause()  # Redis takes the renewal and never answers
        try:
            await asyncio.wait_for(lost.wait(), 3)
        finally:
            private_redis.resume()
    assert not lease.valid()


@pytest.mark.cluster
async def test_a_resent_acquire_keeps_the_lock(state: State) -> None:
    thread = message("", "").thread_key
    lease = await state.threads.locks.try_acquire(thread, "w1")
    assert lease is not None
    # The reply to SET NX was lost and redis-py sent it again: the same token holds it.
    assert await state.threads.locks._acquire(keys=[lease.key], args=[lease.token, 1000]) == 1
    assert await state.threads.locks._acquire(keys=[lease.key], args=["someone-else", 1000]) == 0


@pytest.mark.cluster
async def test_a_call_under_the_lease_is_refused_once_no_time_is_left(
    make_state: Callable[..., State],
) -> None:
    state = make_state(queue={"lock_ttl_s": 1.2})
    lease = await state.threads.locks.try_acquire(message("", "").thread_key, "w1")
    assert lease is not None
    # Calls may run until 0.7 of the TTL (0.84 s) after the renewal was sent: a tenth before the
    # deadline (0.8), which is itself two tenths before the lock expires in Redis. (No lower
    # bound: on a loaded machine the reply took 0.17 s to come back.)
    assert 0 < lease.time_left() <= 0.84
    async with lease.bounded("a quick call"):
        pass
    await until(lambda: lease.time_left() == 0.0, timeout=2)
    assert lease.valid()  # the deadline is still ahead, but no call could end before it
    with pytest.raises(Aborted, match="no time left"):
        async with lease.bounded("a late call"):
            raise AssertionError("a call was started with no time left")


@pytest.mark.cluster
async def test_a_call_still_running_at_the_end_of_the_lease_is_cut_off_before_the_lock_expires(
    make_state: Callable[..., State],
) -> None:
    state = make_state(queue={"lock_ttl_s": 1.2})
    thread = message("", "").thread_key
    lease = await state.threads.locks.try_acquire(thread, "w1")
    assert lease is not None
    loop = asyncio.get_running_loop()
    with pytest.raises(Aborted, match="cut off"):
        async with lease.bounded("a hanging call"):
            await asyncio.sleep(10)
    assert loop.time() >= lease.calls_end
    # When the call was given up, the lock still had at least two margins to live: nobody
    # else could have started writing for the thread yet.
    left_ms = await state.client.pttl(state.keys.lock(thread))
    assert left_ms >= 2 * lease.margin_s * 1000 - 100  # less the time this check took


@pytest.mark.cluster
async def test_renewals_move_the_cut_off_of_a_running_call_along(
    make_state: Callable[..., State],
) -> None:
    # A TTL of 2 s: a renewal (every TTL/3) may come up to about 0.7 s late on a loaded
    # machine before the cut-off (0.7 TTL after the last one) passes.
    state = make_state(queue={"lock_ttl_s": 2.0})
    lease = await state.threads.locks.try_acquire(message("", "").thread_key, "w1")
    assert lease is not None
    first_end = lease.calls_end
    async with lease.kept_alive() as lost:
        async with lease.bounded("a long call"):
            await asyncio.sleep(4.2)  # more than two TTLs: only renewals keep it going
        assert not lost.is_set()
    assert lease.calls_end > first_end + 2.0


async def test_a_call_running_while_renewals_hang_is_cut_off_on_time(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url, queue={"lock_ttl_s": 1.2})
    lease = await state.threads.locks.try_acquire(message("", "").thread_key, "w1")
    assert lease is not None
    loop = asyncio.get_running_loop()
    async with lease.kept_alive():
        private_redis.pause()  # the network drops everything: renewals never come back
        try:
            with pytest.raises(Aborted, match="cut off"):
                async with lease.bounded("a call made during the cut"):
                    await asyncio.sleep(10)
            cut_at = loop.time()
        finally:
            private_redis.resume()
    # Cut at the last good renewal's calls_end: well before the lock could expire.
    assert cut_at < lease.calls_end + 0.2
    assert lease.time_left() == 0.0


@pytest.mark.cluster
async def test_taking_a_thread_looks_at_its_queue_and_letting_go_of_it_looks_last(
    state: State,
) -> None:
    await state.threads.queue.ensure_group()
    first = message("first", "900.1", thread="900.1")
    look = state.threads.queue.look(first.thread_key)
    # Nothing queued yet: taken, and nothing seen.
    lease = await state.threads.locks.try_acquire(first.thread_key, "w1", look=look)
    assert lease is not None and lease.first is None
    assert await state.threads.locks.try_acquire(first.thread_key, "w2", look=look) is None
    # A turn queued while it is held is seen by the last look, which then keeps the lock.
    entry_id = await state.threads.queue.enqueue(first)
    assert await lease.next_or_release(look) == (entry_id, "")
    assert await state.client.get(state.keys.lock(first.thread_key)) == lease.token
    await lease.release()
    # Taken again: the look names the queued turn at once.
    again = await state.threads.locks.try_acquire(first.thread_key, "w1", look=look)
    assert again is not None and again.first == (entry_id, "")
    await state.client.zrem(look.queue, entry_id)
    # Nothing left: the lock is freed in the same step, and the lease stops its heartbeat.
    assert await again.next_or_release(look) is None
    assert again.released
    assert await state.client.get(state.keys.lock(first.thread_key)) is None


@pytest.mark.cluster
async def test_a_last_look_under_a_lock_someone_else_holds_now_aborts(state: State) -> None:
    thread = message("", "").thread_key
    look = state.threads.queue.look(thread)
    lease = await state.threads.locks.try_acquire(thread, "w1", look=look)
    assert lease is not None
    await state.client.set(state.keys.lock(thread), "another-owner")
    with pytest.raises(Aborted):
        await lease.next_or_release(look)
    assert lease.lost.is_set()
    assert await state.client.get(state.keys.lock(thread)) == "another-owner"
