"""Approval requests on the real Redis: what a request keeps of its tool, and the deadline
index every worker looks at, so a request expires (audited, its turn woken) when it is due
and not before; sign-in requests beside approvals (a call waits on its newest request, an
expired sign-in is a connection's audit entry); a run given back."""

from __future__ import annotations

import pytest

from bot.process.state import State
from bot.state.audit import AuditKind
from bot.turn.model import QueuedTurn, Turn
from bot.turn.store.approvals import (
    APPROVAL,
    SIGN_IN,
    ApprovalRequest,
    ApprovalState,
    CallSignIns,
    ToolFacts,
    audited,
    expired_action,
    sign_in_field,
)

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
    await state.client.hdel(key, "description", "source", "destructive", "server")
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


async def open_sign_in(
    state: State,
    queued: QueuedTurn,
    call_id: str,
    n: int,
    timeout_s: float = 600,
    facts: ToolFacts | None = None,
    link: str = "",
) -> tuple[ApprovalRequest, bool]:
    """A call's ``n``-th sign-in request to github, opened as the gate opens it."""
    return await state.threads.approvals.open(
        queued,
        call_id,
        "gh_push",
        "",
        timeout_s,
        facts,
        kind=SIGN_IN,
        server="github",
        link=link,
        field=sign_in_field(call_id, n),
    )


async def test_newest_request_per_call(state: State) -> None:
    """A call approved, then asked to sign in (a step-up): the call waits on the sign-in,
    not on the decided approval; the turn's cards still find every request."""
    approvals = state.threads.approvals
    queued = await a_turn(state)
    approval, _ = await approvals.open(queued, "c1", "gh_push", "{}", 600)
    await approvals.decide(approval.id, True, "U1")
    other, _ = await approvals.open(queued, "c2", "place_order", "{}", 600)
    signin, new = await open_sign_in(state, queued, "c1", 1)
    assert new and signin.sign_in and (signin.kind, signin.server) == (SIGN_IN, "github")
    assert signin.call_id == "c1" and signin.id != approval.id  # its own field
    assert not approval.sign_in and approval.kind == APPROVAL
    # Asked again for the same sign-in: the same request, nothing opened.
    again, new = await open_sign_in(state, queued, "c1", 1)
    assert not new and again.id == signin.id
    waiting = await approvals.of_turn(queued.entry_id, ["c1", "c2"])
    assert [r.id for r in waiting] == [other.id, signin.id]
    assert [r.id for r in await approvals.of_turn(queued.entry_id, ["c1"])] == [signin.id]
    every = await approvals.of_turn(queued.entry_id)
    assert [r.id for r in every] == [approval.id, other.id, signin.id]
    # The gate's look: how many sign-ins the call had, and its newest.
    assert await approvals.sign_ins_of(queued.entry_id, "c2") == CallSignIns(0, None)
    found = await approvals.sign_ins_of(queued.entry_id, "c1")
    assert found.count == 1 and found.newest is not None and found.newest.id == signin.id
    await approvals.decide(signin.id, True, "U1")
    second, _ = await open_sign_in(state, queued, "c1", 2)
    found = await approvals.sign_ins_of(queued.entry_id, "c1")
    assert found.count == 2 and found.newest is not None and found.newest.id == second.id
    assert [r.id for r in await approvals.of_turn(queued.entry_id, ["c1"])] == [second.id]
    # One no longer kept is told apart from none.
    await state.client.delete(state.keys.approval(second.id))
    gone = await approvals.sign_ins_of(queued.entry_id, "c1")
    assert gone.count == 2 and gone.newest is None and gone.gone


async def test_a_sign_in_keeps_its_server_sealed_link_and_whether_it_was_shown(
    state: State,
) -> None:
    approvals = state.threads.approvals
    queued = await a_turn(state)
    facts = ToolFacts("Push a branch.", "mcp github", False)
    request, _ = await open_sign_in(state, queued, "c1", 1, facts=facts, link="v1.k.ab")
    assert (request.link, request.shown) == ("v1.k.ab", False)
    assert "v1.k.ab" not in repr(request)  # a start link is never in a log line
    assert await approvals.set_link(request.id, "v1.k.cd")
    assert await approvals.mark_shown(request.id)
    kept = await approvals.get(request.id)
    assert kept is not None and (kept.link, kept.shown, kept.server) == ("v1.k.cd", True, "github")
    # A request no longer kept is not brought back as a hash without its TTL.
    await state.client.delete(state.keys.approval(request.id))
    assert not await approvals.mark_shown(request.id)
    assert not await approvals.set_link(request.id, "v1.k.ef")
    assert await state.client.exists(state.keys.approval(request.id)) == 0


async def test_old_stored_requests_without_the_new_fields_still_read(state: State) -> None:
    approvals = state.threads.approvals
    queued = await a_turn(state)
    facts = ToolFacts("Delete every pallet.", "mcp warehouse", True)
    request, _ = await approvals.open(queued, "c1", "wh_delete", "{}", 60, facts)
    await state.client.hdel(state.keys.approval(request.id), "kind", "server", "link", "shown")
    old = await approvals.get(request.id)
    assert old is not None and old.kind == APPROVAL and not old.sign_in
    assert (old.server, old.link, old.shown) == ("warehouse", "", False)  # from its source
    assert [r.id for r in await approvals.of_turn(queued.entry_id, ["c1"])] == [request.id]


async def test_expired_sign_in_is_audited_as_a_connection(state: State) -> None:
    """The workers' sweep expires a sign-in and an approval in one look: the sign-in's entry
    is a connection's (``signin_expired``, about its server), the approval's as before."""
    approvals, audit = state.threads.approvals, state.shared.audit
    queued = await a_turn(state)
    signin, _ = await open_sign_in(state, queued, "c1", 1, timeout_s=0)
    approval, _ = await approvals.open(queued, "c2", "place_order", "{}", 0)
    swept = await approvals.expire_overdue(audit)
    assert sorted(swept.expired) == sorted([signin.id, approval.id])
    entries = {e.action: e for e in await audit.latest(10)}
    for request, kind, action, target in (
        (signin, AuditKind.CONNECTION, "signin_expired", "github"),
        (approval, AuditKind.APPROVAL, "approval_expired", "place_order"),
    ):
        assert expired_action(request) == action
        entry, wanted = entries[action], audited(request, action, "expired")
        assert (entry.kind, entry.actor, entry.target, entry.outcome, entry.detail) == (
            kind,
            "U1",
            target,
            "expired",
            wanted.detail,
        )
        assert wanted.kind is kind and wanted.target == target
    assert entries["signin_expired"].detail["server"] == "github"


async def test_a_run_given_back_lets_the_approval_run_once_more(state: State) -> None:
    approvals = state.threads.approvals
    queued = await a_turn(state)
    request, _ = await approvals.open(queued, "c1", "gh_push", "{}", 600)
    await approvals.decide(request.id, True, "U1")
    assert await approvals.use(request.id) == 1
    assert await approvals.give_back(request.id) == 0
    assert await approvals.give_back(request.id) == 0  # never below none
    assert await approvals.use(request.id) == 1  # its first run again
    assert await approvals.use(request.id) == 2
    await state.client.delete(state.keys.approval(request.id))
    assert await approvals.give_back(request.id) == 0
    assert await state.client.exists(state.keys.approval(request.id)) == 0
