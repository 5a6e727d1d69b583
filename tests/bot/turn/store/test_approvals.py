"""Approval requests on the real Redis: what a request keeps of its tool, and the deadline
index every worker looks at, so a request expires (audited, its turn woken) when it is due
and not before."""

from __future__ import annotations

import pytest

from bot.process.state import State
from bot.turn.model import QueuedTurn, Turn
from bot.turn.store.approvals import ApprovalRequest, ApprovalState, ToolFacts, audited

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

TURN = Turn("T1", "C1", "720.1", "U1", "buy", message_ts="720.1", event_id="Ev720")


async def a_turn(state: State, turn: Turn = TURN) -> QueuedTurn:
    await state.threads.queue.ensure_group()
    entry_id = await state.threads.queue.enqueue(turn)
    assert entry_id is not None
    [entry] = await state.threads.queue.read("w1", 10, 0)
    assert isinstance(entry, QueuedTurn) and entry.entry_id == entry_id
    return entry


async def deadlines(state: State, request: ApprovalRequest) -> dict[str, float]:
    shard = state.keys.shards.of_id(request.id)
    found = await state.client.zrange(state.keys.approval_deadlines(shard), 0, -1, withscores=True)
    return dict(found)


async def test_a_request_keeps_what_the_card_shows_of_its_tool(state: State) -> None:
    queued = await a_turn(state)
    facts = ToolFacts("Delete every pallet.", "mcp warehouse", True)
    request, new = await state.threads.approvals.open(
        queued, "c1", "wh_delete", '{"aisle": 3}', 60, facts
    )
    assert new and (request.description, request.source, request.destructive) == (
        "Delete every pallet.",
        "mcp warehouse",
        True,
    )
    assert request.server == "warehouse" and request.timeout_s == pytest.approx(60)
    # A request stored before these were kept reads without them.
    key = state.keys.approval(request.id)
    await state.client.hdel(key, "description", "source", "destructive")
    old = await state.threads.approvals.get(request.id)
    assert old is not None and (old.description, old.source, old.destructive) == ("", "", False)
    assert old.server == ""


async def test_only_a_due_request_expires_audited_and_its_turn_woken(state: State) -> None:
    approvals, audit = state.threads.approvals, state.shared.audit
    queued = await a_turn(state)
    later, _ = await approvals.open(queued, "c2", "cancel_orders", "{}", 600)
    nothing = await approvals.expire_overdue(audit)
    assert nothing.expired == [] and nothing.next_due == pytest.approx(later.deadline)
    due, _ = await approvals.open(queued, "c1", "place_order", "{}", 0)  # due at once
    assert set(await deadlines(state, due)) == {due.id, later.id}
    assert (await approvals.expire_overdue(audit)).expired == [due.id]
    assert (await approvals.expire_overdue(audit)).expired == []  # once
    expired = await approvals.get(due.id)
    assert expired is not None and expired.state is ApprovalState.EXPIRED
    still = await approvals.get(later.id)
    assert still is not None and still.open
    assert set(await deadlines(state, due)) == {later.id}
    # Audited in the same step, as the turn's own look would have audited it.
    [entry] = [e for e in await audit.latest(10) if e.action == "approval_expired"]
    wanted = audited(due, "approval_expired", "expired")
    assert (entry.kind, entry.actor, entry.target, entry.outcome, entry.detail) == (
        wanted.kind,
        wanted.actor,
        wanted.target,
        wanted.outcome,
        wanted.detail,
    )
    # Woken as a decision wakes it: the next look for idle entries claims it.
    claimed = await state.threads.queue.claim_stale("w2", 60_000)
    assert [c.entry_id for c in claimed] == [queued.entry_id]


async def test_a_decided_request_leaves_the_index_and_a_click_after_the_sweep_is_late(
    state: State,
) -> None:
    approvals, audit = state.threads.approvals, state.shared.audit
    queued = await a_turn(state)
    decided, _ = await approvals.open(queued, "c1", "place_order", "{}", 600)
    assert await approvals.decide(decided.id, True, "U1") == (ApprovalState.APPROVED, True)
    assert await deadlines(state, decided) == {}
    other = await a_turn(state, Turn("T1", "C1", "721.1", "U1", "x", message_ts="721.1"))
    late, _ = await approvals.open(other, "c1", "place_order", "{}", 0)
    swept = await approvals.expire_overdue(audit)
    assert swept.expired == [late.id] and swept.next_due is None  # nothing else waits
    assert await approvals.decide(late.id, True, "U1") == (ApprovalState.EXPIRED, False)


async def test_a_turns_own_look_expires_a_due_request_and_takes_it_from_the_index(
    state: State,
) -> None:
    approvals = state.threads.approvals
    queued = await a_turn(state)
    request, _ = await approvals.open(queued, "c1", "place_order", "{}", 0)
    assert await approvals.expire_due([request]) == [request.id]
    assert await deadlines(state, request) == {}
    assert (await approvals.expire_overdue(state.shared.audit)).expired == []  # expired once
