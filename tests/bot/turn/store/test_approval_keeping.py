"""The approval requests' store on the real Redis: what a cap refusal withdraws, which of a
person's requests are still open, and how long a request is kept."""

from __future__ import annotations

import pytest

from bot.process.state import State
from bot.turn.model import QueuedTurn, Turn
from bot.turn.store.approvals import AFTER_DEADLINE_S, KEEP_S, kept_for_s

pytestmark = pytest.mark.cluster

TURN = Turn("T1", "C1", "100.1", "U1", "buy", message_ts="100.2")


async def test_a_withdrawn_request_is_gone_and_its_call_may_ask_again(state: State) -> None:
    approvals = state.threads.approvals
    queued = QueuedTurn(state.keys.shards.qualify(0, "1-1"), TURN)
    request, opened = await approvals.open(queued, "c1", "place_order", "{}", 60)
    other, _ = await approvals.open(queued, "c2", "place_order", "{}", 60)
    assert opened and await approvals.open_among([request.id, other.id, "0/gone"]) == {
        request.id,
        other.id,
    }
    deadlines = state.keys.approval_deadlines(0)
    assert await state.client.zscore(deadlines, request.id) is not None
    assert await approvals.withdraw(request)
    assert await approvals.get(request.id) is None
    assert await state.client.zscore(deadlines, request.id) is None  # nothing left to expire
    assert [r.call_id for r in await approvals.of_turn(queued.entry_id)] == ["c2"]
    again, opened = await approvals.open(queued, "c1", "place_order", "{}", 60)
    assert opened and again.id != request.id
    # A decided request is not withdrawn, and is no longer open.
    await approvals.decide(other.id, True, "U1")
    assert not await approvals.withdraw(other)
    assert await approvals.open_among([other.id, again.id]) == {again.id}


async def test_a_request_is_kept_until_an_hour_past_its_deadline(state: State) -> None:
    approvals = state.threads.approvals
    queued = QueuedTurn(state.keys.shards.qualify(0, "1-2"), TURN)
    request, _ = await approvals.open(queued, "c1", "place_order", '{"n": 1}', 120)
    assert 120 < await state.client.ttl(state.keys.approval(request.id)) <= 120 + AFTER_DEADLINE_S
    assert kept_for_s(900) == 900 + AFTER_DEADLINE_S
    assert kept_for_s(30 * 24 * 3600) == KEEP_S
