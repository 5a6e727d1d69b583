"""Each tool call's audit entry is written in the fenced step that journals its result (on a
single Redis and on a Redis Cluster): with the result or not at all, once, in the thread's
shard; settling audits only what a Stop cut off; a call claimed for a run again after a
crash audits the run the crash cut off, once."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import pytest
from redis.crc import key_slot

from bot.agent.journal import Message
from bot.agent.messages import assistant_message, tool_message, user_message
from bot.agent.result import CallOutcome, StopReason, ToolExecution, TurnResult
from bot.llm.response import ToolCall
from bot.process.state import State
from bot.state.audit import AuditEntry, AuditKind
from bot.turn import effects
from bot.turn.fence import DurableJournal, TurnFence
from bot.turn.model import QueuedTurn, Turn
from bot.turn.states import settled_state
from bot.turn.store.lease import Aborted
from bot.turn.store.records import OwnedTurn

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

TURN = Turn("T1", "C1", "800.1", "U1", "order flour", message_ts="800.1", event_id="Ev800")
CALL = ToolCall("c1", "create_order", '{"item": "flour", "qty": 3}')


def ran(
    call: ToolCall, outcome: CallOutcome = CallOutcome.OK, error: str | None = None
) -> ToolExecution:
    return ToolExecution(call.id, call.name, call.arguments, outcome, "done", 12.34, 1, error)


async def owned_turn(state: State) -> tuple[QueuedTurn, TurnFence, OwnedTurn]:
    entry_id = await state.threads.queue.enqueue(TURN)
    assert entry_id is not None
    lease = await state.threads.locks.try_acquire(TURN.thread_key, "w1")
    assert lease is not None
    queued = QueuedTurn(entry_id, TURN)
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    return queued, TurnFence(queued, lease, owned), owned


def auditing(
    state: State, queued: QueuedTurn, fence: TurnFence, resume: Sequence[Message] = ()
) -> DurableJournal:
    return fence.journal(partial(effects.call_effects, state.turn_stores(), queued), resume)


async def tool_entries(state: State) -> list[AuditEntry]:
    return [e for e in await state.shared.audit.latest(50) if e.kind is AuditKind.TOOL]


async def test_a_call_is_audited_in_the_step_that_journals_its_result(state: State) -> None:
    queued, fence, _ = await owned_turn(state)
    journal = auditing(state, queued, fence)
    await journal.record(user_message(TURN.text))
    await journal.record(assistant_message("", [CALL]))
    assert await tool_entries(state) == []  # the call, before it runs: nothing yet
    await journal.record_call(ran(CALL), tool_message(CALL.id, "done"))

    [entry] = await tool_entries(state)
    assert (entry.actor, entry.action, entry.target, entry.outcome) == (
        "U1",
        "create_order",
        "",
        "ok",
    )
    assert entry.detail == {
        "arguments": CALL.arguments,
        "duration_ms": 12.3,
        "channel": "C1",
        "thread": "800.1",
        "turn": queued.entry_id,
        "call": "c1",
    }
    assert journal.audited == {"c1"}
    record = await state.threads.records.read(queued.entry_id)
    assert record is not None and record.journal[-1] == tool_message(CALL.id, "done")
    # The entry went to the thread's shard, in the journal's slot (one step on a cluster).
    shard = state.keys.shards.of(TURN.thread_key)
    assert len(await state.client.xrange(state.keys.audit(shard))) == 1
    if state.keys.shards.sharded:  # a cluster: tagged keys, and the step needs one slot
        audit_slot = key_slot(state.keys.audit(shard).encode())
        assert audit_slot == key_slot(state.keys.journal(queued.entry_id).encode())


async def test_a_journal_step_resent_after_a_lost_reply_audits_once(state: State) -> None:
    queued, _, owned = await owned_turn(state)
    await owned.record(user_message(TURN.text), assistant_message("", [CALL]))
    commands = effects.call_effects(state.turn_stores(), queued, ran(CALL))
    result = tool_message(CALL.id, "done")
    await owned.record(result, commands=commands)
    # The reply was lost and the same step sent again: the result is in place already.
    again = state.threads.records.owned(queued.entry_id, TURN.thread_key, owned.token)
    again._saved = 2
    await again.record(result, commands=commands)
    assert len(await tool_entries(state)) == 1
    record = await state.threads.records.read(queued.entry_id)
    assert record is not None and [m["role"] for m in record.journal] == [
        "user",
        "assistant",
        "tool",
    ]


async def test_a_step_refused_because_the_lock_moved_writes_no_audit_entry(state: State) -> None:
    queued, fence, _ = await owned_turn(state)
    journal = auditing(state, queued, fence)
    await journal.record(user_message(TURN.text))
    await journal.record(assistant_message("", [CALL]))
    await state.client.set(state.keys.lock(TURN.thread_key), "the-next-owner")
    with pytest.raises(Aborted):
        await journal.record_call(ran(CALL), tool_message(CALL.id, "done"))
    assert await tool_entries(state) == []
    assert journal.audited == set()
    record = await state.threads.records.read(queued.entry_id)
    assert record is not None and [m["role"] for m in record.journal] == ["user", "assistant"]


async def test_settling_audits_only_the_calls_a_stop_cut_off(state: State) -> None:
    queued, _, owned = await owned_turn(state)
    cut = ToolCall("c2", "create_order", '{"item": "sugar"}')
    result = TurnResult(
        "Stopped before the answer was finished.",
        StopReason.CANCELLED,
        1,
        executions=[ran(CALL), ran(cut, CallOutcome.CANCELLED, "Cancelled")],
    )
    # c1's entry went with its journaled result; c2's result is saved only with the turn.
    commands = effects.settle_effects(state.turn_stores(), queued, result, {"c1"})
    await owned.move(settled_state(result.stop_reason), {"text": result.text}, commands)
    [entry] = await tool_entries(state)
    assert (entry.action, entry.outcome, entry.detail["call"]) == (
        "create_order",
        "Cancelled",
        "c2",
    )


async def test_a_call_claimed_for_a_run_again_audits_the_run_a_crash_cut_off_once(
    state: State,
) -> None:
    queued, fence, owned = await owned_turn(state)
    # The crashed owner saved the call, not its result.
    saved = [user_message(TURN.text), assistant_message("", [CALL])]
    await owned.record(*saved)
    journal = auditing(state, queued, fence, saved)
    assert await journal.claim_rerun(CALL.id)
    assert not await journal.claim_rerun(CALL.id)  # claimed before: no second entry
    [entry] = await tool_entries(state)
    assert (entry.action, entry.outcome, entry.detail["call"]) == (
        "create_order",
        "Interrupted",
        "c1",
    )
    assert entry.detail["arguments"] == CALL.arguments
    # The run again is audited with its own result: one entry a run.
    await journal.record_call(ran(CALL), tool_message(CALL.id, "done"))
    outcomes = sorted(e.outcome for e in await tool_entries(state))
    assert outcomes == ["Interrupted", "ok"]


async def test_a_claim_refused_because_the_lock_moved_writes_no_audit_entry(state: State) -> None:
    queued, fence, owned = await owned_turn(state)
    saved = [user_message(TURN.text), assistant_message("", [CALL])]
    await owned.record(*saved)
    journal = auditing(state, queued, fence, saved)
    await state.client.set(state.keys.lock(TURN.thread_key), "the-next-owner")
    with pytest.raises(Aborted):
        await journal.claim_rerun(CALL.id)
    assert await tool_entries(state) == []
