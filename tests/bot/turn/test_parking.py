"""A parked turn waits on each call's newest request: a call whose approval was decided and
that then waits for its person to sign in (a step-up) keeps its turn parked, not woken,
begun and parked again at every look (end to end: signed requests, the fake Slack and the
fake LLM, the real Redis; the sign-in is opened in the store as the gate opens it). A turn
that goes on past its requests' deadlines audits each expiry by its kind."""

from __future__ import annotations

import json

import pytest

from bot.process.state import State
from bot.state.audit import AuditKind
from bot.turn import parking
from bot.turn.fence import TurnFence
from bot.turn.model import QueuedTurn, Turn
from bot.turn.states import TurnState
from bot.turn.store.approvals import SIGN_IN, ApprovalState, sign_in_field
from bot.turn.store.stores import TurnStores
from tests.bot.slack.outbound.test_approvals import CONFIG, a_card, buttons, waiting
from tests.fakes import trading_tools
from tests.fakes.llm_server import calls, text
from tests.fakes.slack_harness import SlackHarness, channel_message, is_waiting_note, mention
from tests.waiting import until

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    trading_tools.RUNS.clear()
    slack_app.slack.users = {u: {"id": u} for u in ("U0ALICE", "U0ADMIN")}
    return await slack_app.start(**CONFIG)


async def test_open_sign_in_after_approval_does_not_spin(
    app: SlackHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = "740.000001"
    app.llm.add(calls(("place_order", {"symbol": "ACME", "quantity": 1}, "o1")), text("Done."))
    await app.post(app.envelope(mention("buy one ACME", thread)))
    card = await a_card(app, thread)
    await waiting(app)
    approvals = app.state.threads.approvals
    approval = await approvals.get(buttons(card)["Approve place_order"])
    assert approval is not None
    entry = approval.entry
    turn = Turn(
        approval.team, approval.channel, approval.thread_ts, approval.user, "", approval.message_ts
    )
    signin, opened = await approvals.open(
        QueuedTurn(entry, turn),
        "o1",
        "place_order",
        "",
        600,
        kind=SIGN_IN,
        server="github",
        field=sign_in_field("o1", 1),
    )
    assert opened
    asked = len(app.llm.requests)

    looks: list[bool] = []
    look = parking.still_waiting

    async def spied(stores: TurnStores, entry_id: str) -> bool:
        answer = await look(stores, entry_id)
        if entry_id == entry:
            looks.append(answer)
        return answer

    monkeypatch.setattr(parking, "still_waiting", spied)
    # The approval is decided: its step wakes the turn, and a worker claims it and looks.
    assert await approvals.decide(approval.id, True, "U0ALICE") == (ApprovalState.APPROVED, True)
    await until(lambda: bool(looks), 10)
    assert looks[0] is True  # the sign-in is what the call waits on now
    # A later message: the worker meets the parked turn again, and the note says why.
    await app.post(app.envelope(channel_message("and the price?", "740.000002", thread_ts=thread)))
    await until(lambda: any(is_waiting_note(m) for m in app.slack.thread("C0CHAN", thread)), 10)
    [note] = [m for m in app.slack.thread("C0CHAN", thread) if is_waiting_note(m)]
    assert "waits for <@U0ALICE> to connect *github*" in json.dumps(note.blocks)
    assert all(looks) and len(looks) >= 2
    record = await app.state.threads.records.read(entry)
    assert record is not None and record.state is TurnState.AWAITING_APPROVAL
    assert record.attempts == 0  # no owner began it
    assert len(app.llm.requests) == asked and trading_tools.RUNS == []
    still = await approvals.get(signin.id)
    assert still is not None and still.open


async def test_a_turns_own_look_audits_an_expired_sign_in_as_a_connection(state: State) -> None:
    """The parked turn meets its requests past their deadline before any sweep did: it
    expires them as it goes on, and audits each by its kind in the move."""
    turn = Turn("T1", "C1", "741.1", "U1", "push and buy", message_ts="741.1")
    entry_id = await state.threads.queue.enqueue(turn)
    assert entry_id is not None
    lease = await state.threads.locks.try_acquire(turn.thread_key, "w1")
    assert lease is not None
    queued = QueuedTurn(entry_id, turn)
    owned = state.threads.records.owned(entry_id, turn.thread_key, lease.token)
    await owned.begin()
    fence = TurnFence(queued, lease, owned)
    approvals = state.threads.approvals
    signin, _ = await approvals.open(
        queued, "c1", "gh_push", "", 0, kind=SIGN_IN, server="github", field=sign_in_field("c1", 1)
    )
    approval, _ = await approvals.open(queued, "c2", "place_order", "{}", 0)
    await fence.move(TurnState.AWAITING_APPROVAL, {"parked": json.dumps(["c1", "c2"])})
    record = await state.threads.records.read(entry_id)
    assert record is not None and record.parked == ["c1", "c2"]

    assert await parking.unpark(state.turn_stores(), queued, record, fence)
    entries = {e.action: e for e in await state.shared.audit.latest(10)}
    connection, expired = entries["signin_expired"], entries["approval_expired"]
    assert (connection.kind, connection.target, connection.actor) == (
        AuditKind.CONNECTION,
        "github",
        "U1",
    )
    assert connection.detail["server"] == "github" and connection.detail["call"] == "c1"
    assert (expired.kind, expired.target) == (AuditKind.APPROVAL, "place_order")
    for request in (signin, approval):
        now = await approvals.get(request.id)
        assert now is not None and now.state is ApprovalState.EXPIRED
    after = await state.threads.records.read(entry_id)
    assert after is not None and after.state is TurnState.RUNNING
