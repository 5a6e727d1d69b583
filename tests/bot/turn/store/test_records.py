"""Turn records on the real Redis: fenced by the thread lock, moves checked, side effects
atomic, a repeated move a no-op."""

from __future__ import annotations

import json

import pytest

from bot.process.state import State
from bot.state.redis.commands import Commands
from bot.turn.fence import DurableJournal, TurnFence
from bot.turn.model import QueuedTurn, Turn
from bot.turn.states import TurnState
from bot.turn.store.lease import ThreadLease
from bot.turn.store.records import IllegalMove, Stale

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

TURN = Turn("T1", "C1", "700.1", "U1", "hello", message_ts="700.1", event_id="Ev700")


async def queued(state: State) -> tuple[str, ThreadLease]:
    entry_id = await state.threads.queue.enqueue(TURN)
    assert entry_id is not None
    lease = await state.threads.locks.try_acquire(TURN.thread_key, "w1")
    assert lease is not None
    return entry_id, lease


async def test_begin_counts_attempts_and_marks_the_turn_running(state: State) -> None:
    entry_id, lease = await queued(state)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    first = await owned.begin()
    assert (first.state, first.attempts, first.journal) == (TurnState.RUNNING, 1, [])
    await owned.record({"role": "user", "content": "hello"})
    await owned.record({"role": "assistant", "content": None, "tool_calls": []})
    assert (await owned.begin()).attempts == 1  # resent after a lost reply: counted once
    next_owner = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    again = await next_owner.begin()
    assert (again.state, again.attempts, again.round) == (TurnState.RUNNING, 2, 1)
    assert [m["role"] for m in again.journal] == ["user", "assistant"]
    # The thread now points at its started turn.
    assert await state.threads.queue.head(TURN.thread_key) == entry_id


async def test_a_stale_owner_can_write_nothing(state: State) -> None:
    entry_id, lease = await queued(state)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    await state.client.set(state.keys.lock(TURN.thread_key), "the-next-owner")
    with pytest.raises(Stale):
        await owned.record({"role": "user", "content": "hello"})
    with pytest.raises(Stale):
        await owned.move(TurnState.ANSWERED, {"text": "late"})
    with pytest.raises(Stale):
        await owned.save(delivery={"first_ts": "1.2"})
    with pytest.raises(Stale):
        await owned.claim_rerun("call-1")
    with pytest.raises(Stale):
        await owned.begin()
    record = await state.threads.records.read(entry_id)
    assert record is not None
    assert (record.state, record.text, record.journal, record.delivery) == (
        TurnState.RUNNING,
        "",
        [],
        {},
    )


async def test_moves_follow_the_state_machine_and_repeat_harmlessly(state: State) -> None:
    entry_id, lease = await queued(state)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    with pytest.raises(IllegalMove):
        await owned.move(TurnState.DELIVERED)  # nothing to deliver yet
    await owned.begin()
    assert await owned.move(TurnState.ANSWERED, {"text": "hi", "messages": [{"role": "user"}]})
    commands = Commands()
    state.threads.history.append_to(
        commands,
        TURN.thread_key,
        [{"role": "user", "content": "q"}],
        turn=entry_id,
        delivered=True,
        user=TURN.user,
    )
    assert await owned.move(TurnState.DELIVERED, {}, commands)
    # The reply was lost and the move is sent again: nothing happens twice.
    assert not await owned.move(TurnState.DELIVERED, {}, commands)
    assert len(await state.threads.history.load_turns(TURN.thread_key)) == 1
    with pytest.raises(IllegalMove):
        await owned.move(TurnState.RUNNING)
    record = await state.threads.records.read(entry_id)
    assert record is not None and record.state is TurnState.DELIVERED
    assert record.text == "hi" and record.messages == [{"role": "user"}]


async def test_finishing_acknowledges_the_queue_in_the_same_step(state: State) -> None:
    await state.threads.queue.ensure_group()
    entry_id, lease = await queued(state)
    await state.threads.queue.read("w1", 10, 0)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    await owned.record({"role": "user", "content": "hello"})
    await owned.move(TurnState.ANSWERED, {"text": "hi"})
    await owned.move(TurnState.DELIVERED)
    commands = Commands()
    state.threads.queue.finish(commands, TURN.thread_key, entry_id)
    state.threads.records.finish_commands(commands, entry_id)
    await owned.move(TurnState.DONE, {}, commands, keep_s=60)
    assert await state.threads.queue.pending_count() == 0
    assert await state.threads.queue.fetch(entry_id) is None
    assert await state.threads.queue.head(TURN.thread_key) is None
    record = await state.threads.records.read(entry_id)
    assert record is not None and record.state is TurnState.DONE and record.journal == []
    assert await state.client.ttl(state.keys.turn(entry_id)) <= 60


async def test_a_call_is_claimed_for_a_rerun_once(state: State) -> None:
    entry_id, lease = await queued(state)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    assert await owned.claim_rerun("call-1")
    assert not await owned.claim_rerun("call-1")
    assert await owned.claim_rerun("call-2")
    record = await state.threads.records.owned(entry_id, TURN.thread_key, lease.token).begin()
    assert record.reruns == {"call-1", "call-2"}


async def test_commands_serialise_like_a_pipeline(state: State) -> None:
    commands = Commands()
    commands.hset("k", {"a": 1}).hincrbyfloat("k", "b", 0.5).zadd("z", {"m": 1.5})
    commands.xadd("s", {"f": "v"}, maxlen=10)
    assert commands.items == [
        ["HSET", "k", "a", "1"],
        ["HINCRBYFLOAT", "k", "b", "0.5"],
        ["ZADD", "z", "1.5", "m"],
        ["XADD", "s", "MAXLEN", "~", "10", "*", "f", "v"],
    ]
    assert json.loads(json.dumps(commands.items)) == commands.items


async def test_a_journal_message_sent_again_is_saved_once(state: State) -> None:
    entry_id, lease = await queued(state)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    await owned.record({"role": "user", "content": "hello"})
    # The reply was lost and redis-py sent the same command again.
    again = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    again._saved = 0
    await again.record({"role": "user", "content": "hello"})
    await owned.record({"role": "assistant", "content": None, "tool_calls": []})
    record = await owned.begin()
    assert [m["role"] for m in record.journal] == ["user", "assistant"]
    assert record.round == 1


async def test_the_person_s_message_is_journaled_with_the_next_one_in_one_step(
    state: State,
) -> None:
    entry_id, lease = await queued(state)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    journal = DurableJournal(TurnFence(QueuedTurn(entry_id, TURN), lease, owned))
    user = {"role": "user", "content": "hello"}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}
    await journal.record(user)
    assert (await owned.begin()).journal == []  # held: an answer at once never needs it
    await journal.record(call)
    resumed = await state.threads.records.owned(entry_id, TURN.thread_key, lease.token).begin()
    assert resumed.journal == [user, call] and resumed.round == 1
    # Both went in one step: resent after a lost reply, nothing is appended twice.
    encoded = [json.dumps(m, separators=(",", ":")) for m in (user, call)]
    resent = await state.threads.records._journal(
        keys=[owned._lock, owned._record, owned._journal],
        args=[lease.token, 0, state.threads.records.keep_s, 1, "[]", *encoded],
    )
    assert resent == "already"
    again = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await again.begin()
    assert again.journaled == 2
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    await DurableJournal(TurnFence(QueuedTurn(entry_id, TURN), lease, again)).record(result)
    assert (await again.begin()).journal == [user, call, result]  # not held: not the first


async def test_the_last_move_looks_at_the_thread_and_frees_the_lock_when_nothing_is_left(
    state: State,
) -> None:
    entry_id, lease = await queued(state)
    look = state.threads.queue.look(TURN.thread_key)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    await owned.move(TurnState.ANSWERED, {"text": "hi"})
    later = Turn("T1", "C1", "700.1", "U1", "more", message_ts="701.1", event_id="Ev701")
    next_id = await state.threads.queue.enqueue(later)
    commands = Commands()
    state.threads.queue.finish(commands, TURN.thread_key, entry_id)
    # A turn is queued behind it: named, and the lock kept for it.
    assert await owned.move(TurnState.DONE, {}, commands, look=look)
    assert owned.looked is not None and owned.looked.next == (next_id, "")
    assert await state.client.get(state.keys.lock(TURN.thread_key)) == lease.token
    # Resent after a lost reply: nothing done again, and the same look.
    assert not await owned.move(TurnState.DONE, {}, commands, look=look)
    assert owned.looked.next == (next_id, "")
    # Nothing left: the lock is freed in the same step.
    await state.client.zrem(look.queue, next_id)
    await owned.move(TurnState.DONE, {}, commands, look=look)
    assert owned.looked.next is None
    assert await state.client.get(state.keys.lock(TURN.thread_key)) is None
