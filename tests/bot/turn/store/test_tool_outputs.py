"""A turn's tool outputs on the real Redis, wherever the turn is: its journal while it runs
(or waits for approval), its record once settled, the thread's history once done."""

from __future__ import annotations

from typing import Any

import pytest

from bot.agent.journal import deferred_marker
from bot.process.state import State
from bot.turn.model import Turn
from bot.turn.states import TurnState
from bot.turn.store.tool_outputs import ToolOutput, ToolOutputs, outputs_of

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

TURN = Turn("T1", "C1", "710.1", "U1", "pay?", message_ts="710.1", event_id="Ev710")
ROUND: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "p1", "type": "function", "function": {"name": "search_payroll", "arguments": "{}"}},
        {"id": "o1", "type": "function", "function": {"name": "place_order", "arguments": "{}"}},
    ],
}
PAY: dict[str, Any] = {"role": "tool", "tool_call_id": "p1", "content": "Bob: 7,000"}


def test_each_result_is_named_by_its_call() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "zz", "content": "nobody asked"},  # no call: left out
        ROUND,
        deferred_marker("o1"),  # waits for approval: no output yet
        PAY,
    ]
    assert outputs_of(messages) == [ToolOutput("p1", "search_payroll", "Bob: 7,000")]


async def test_the_outputs_are_found_wherever_the_turn_is(state: State) -> None:
    outputs = ToolOutputs(state.threads.history, state.threads.records)
    entry_id = await state.threads.queue.enqueue(TURN)
    assert entry_id is not None
    assert await outputs.of_turn(TURN.thread_key, entry_id) is None  # queued: no record yet
    lease = await state.threads.locks.try_acquire(TURN.thread_key, "w1")
    assert lease is not None
    owned = state.threads.records.owned(entry_id, TURN.thread_key, lease.token)
    await owned.begin()
    await owned.record({"role": "user", "content": "pay?"}, ROUND)
    await owned.record(PAY)
    await owned.record(deferred_marker("o1"))
    found = [ToolOutput("p1", "search_payroll", "Bob: 7,000")]
    assert await outputs.of_turn(TURN.thread_key, entry_id) == found  # the journal

    messages: list[dict[str, Any]] = [{"role": "user", "content": "pay?"}, ROUND, PAY]
    await owned.move(TurnState.ANSWERED, {"text": "on file", "messages": messages})
    assert await outputs.of_turn(TURN.thread_key, entry_id) == found  # the settled record

    await state.threads.history.append(TURN.thread_key, messages, user="U1", turn=entry_id)
    await state.client.delete(state.keys.journal(entry_id))
    await state.client.hdel(state.keys.turn(entry_id), "messages")
    assert await outputs.of_turn(TURN.thread_key, entry_id) == found  # the history

    await state.client.delete(state.keys.history(TURN.thread_key), state.keys.turn(entry_id))
    assert await outputs.of_turn(TURN.thread_key, entry_id) is None  # no longer kept
