"""Each tool call's audit entry is written in the fenced step that journals its result (on a
single Redis and on a Redis Cluster): with the result or not at all, once, in the thread's
shard; settling audits only what a Stop cut off; a call claimed for a run again after a
crash audits the run the crash cut off, once. (A worker killed with SIGKILL:
tests/bot/turn/worker/test_crash_recovery.py; replicas: tests/faults/test_replica_kill.py.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest
from redis.crc import key_slot

from bot.agent.journal import Message
from bot.agent.messages import assistant_message, tool_message, user_message
from bot.agent.result import CallOutcome, StopReason, ToolExecution, TurnResult
from bot.llm.response import ModelResponse, ToolCall
from bot.process.state import State
from bot.state.audit import AuditEntry, AuditKind
from bot.turn import effects
from bot.turn.fence import DurableJournal, TurnFence
from bot.turn.model import QueuedTurn, Turn
from bot.turn.states import settled_state
from bot.turn.store.lease import Aborted
from bot.turn.store.records import OwnedTurn
from tests.fakes.function_model import FunctionModel
from tests.fakes.worker_kit import MemoryResponder, make_worker, running
from tests.waiting import until
from tools import tool

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
    assert journal.audited == {ran(CALL)}
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
    # The model used the id c1 again in a later round (some do): the call a Stop cut off.
    again = ToolCall("c1", "create_order", '{"item": "sugar"}')
    journaled = ran(CALL)
    result = TurnResult(
        "Stopped before the answer was finished.",
        StopReason.CANCELLED,
        2,
        executions=[journaled, ran(again, CallOutcome.CANCELLED, "Cancelled")],
    )
    # The first call's entry went with its journaled result; the second's result is saved
    # only with the turn.
    commands = effects.settle_effects(state.turn_stores(), queued, result, {journaled})
    await owned.move(settled_state(result.stop_reason), {"text": result.text}, commands)
    [entry] = await tool_entries(state)
    assert (entry.outcome, entry.detail["arguments"]) == ("Cancelled", '{"item": "sugar"}')


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


async def test_a_stopped_turn_audits_each_call_once_the_one_cut_off_at_settle(
    state: State,
) -> None:
    """Through a worker: the first round's call is audited as its result is saved, before
    the turn ends; the second round's, cut off by a Stop, when the turn settles."""
    stuck = asyncio.Event()

    @tool
    async def lookup(item: str) -> str:
        """Look up an item."""
        if item == "sugar":
            stuck.set()
            await asyncio.Event().wait()  # until the Stop cancels it
        return f"{item}: 12"

    async def respond(
        messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelResponse:
        item = "sugar" if messages[-1]["role"] == "tool" else "flour"
        return ModelResponse("", [ToolCall(f"c-{item}", "lookup", json.dumps({"item": item}))])

    responder = MemoryResponder()
    worker = make_worker(state, FunctionModel(respond), responder, tools=[lookup])
    turn = Turn("T1", "C1", "810.1", "U1", "flour and sugar?", message_ts="810.1")
    async with running(worker):
        await state.threads.queue.enqueue(turn)
        await until(stuck.is_set)
        # Before the turn settles: the finished call is audited, the running one not yet.
        assert [(e.detail["call"], e.outcome) for e in await tool_entries(state)] == [
            ("c-flour", "ok")
        ]
        await until(lambda: worker.processor.stops.stop(turn.thread_key))
        await until(lambda: len(responder.delivered) == 1)
    assert responder.delivered[0][2] is StopReason.CANCELLED
    audited = sorted((e.detail["call"], e.outcome) for e in await tool_entries(state))
    assert audited == [("c-flour", "ok"), ("c-sugar", "Cancelled")]
