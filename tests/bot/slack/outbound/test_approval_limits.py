"""No unbounded waiting: a thread whose turn waits for an approval tells its later messages
so, once, and answers them in order when the request is decided; a person has at most
``approval.max_open_per_person`` requests open; a request is not kept long after its
deadline. End to end: signed requests, the fake Slack and the fake LLM, the real Redis."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from bot.turn.store.approvals import AFTER_DEADLINE_S, KEEP_S
from bot.turn.store.waiting_notes import Take
from tests.bot.slack.outbound.test_approvals import (
    CONFIG,
    a_card,
    buttons,
    cards,
    deny_with,
    waiting,
)
from tests.fakes import trading_tools
from tests.fakes.llm_server import Request, calls, text, tool_results
from tests.fakes.slack_harness import (
    SlackHarness,
    channel_message,
    is_waiting_note,
    mention,
)
from tests.fakes.slack_server import Message
from tests.waiting import until

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    trading_tools.RUNS.clear()
    slack_app.slack.users = {u: {"id": u} for u in ("U0ALICE", "U0ADMIN", "U0BOB")}
    return await slack_app.start(**CONFIG)


def notes(app: SlackHarness, thread: str) -> list[Message]:
    return [m for m in app.slack.thread("C0CHAN", thread) if is_waiting_note(m)]


def last_said(request: Request) -> str:
    """What the person said last, as the model was given it."""
    said = [m for m in request["messages"] if m.get("role") == "user"][-1]["content"]
    return said if isinstance(said, str) else json.dumps(said)


def echo(request: Request) -> Any:
    return text("Later: " + ("the price" if "the price" in last_said(request) else "the third"))


def takes_seen(app: SlackHarness) -> list[tuple[float, Take]]:
    """Every answer the waiting notes' store gives the worker, with when (a spy)."""
    store = app.state.threads.waiting_notes
    seen: list[tuple[float, Take]] = []
    take = store.take

    async def spied(*args: Any, **kwargs: Any) -> Take:
        taken = await take(*args, **kwargs)
        seen.append((time.monotonic(), taken))
        return taken

    store.take = spied  # type: ignore[method-assign]
    return seen


async def test_later_messages_get_one_note_and_are_answered_in_order_once_approved(
    app: SlackHarness,
) -> None:
    thread = "720.000001"
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 10}, "o1")),
        lambda request: text(f"Done: {tool_results(request)['o1']}."),
        echo,
        echo,
    )
    takes = takes_seen(app)
    await app.post(app.envelope(mention("buy 10 ACME", thread)))
    card = await a_card(app, thread)
    await waiting(app)
    assert notes(app, thread) == []  # nothing waits behind it yet: no note

    sent = time.monotonic()
    status, _ = await app.post(
        app.envelope(channel_message("and the price?", "720.000002", thread_ts=thread))
    )
    assert status == 200
    await until(lambda: bool(notes(app, thread)), 3)
    assert time.monotonic() - sent < 3
    [note] = notes(app, thread)
    said = json.dumps(note.blocks)
    link = f"https://test.slack.com/archives/C0CHAN/p{card.ts.replace('.', '')}"
    assert f"<{link}?thread_ts={thread}&cid=C0CHAN|the approval card>" in said
    assert "`place_order`" in said
    assert "<@U0ALICE>, <@U0ADMIN> or an admin can approve or deny it there" in said
    assert float(note.ts) > float(card.ts)

    third_at = time.monotonic()
    await app.post(app.envelope(channel_message("and the third?", "720.000003", thread_ts=thread)))
    # A look after the third message came finds the note posted: nothing more to post.
    await until(lambda: any(at > third_at and t is Take.NOTHING for at, t in takes), 10)
    assert len(notes(app, thread)) == 1
    assert trading_tools.RUNS == []  # and nothing ran meanwhile

    approve = buttons(card)["Approve place_order"]
    assert await app.click("approval_approve", approve, "U0ALICE", card.ts) == 200
    answers = await app.answered("C0CHAN", thread, count=3, within=30)
    assert [a.shown for a in answers] == [
        "Done: bought 10 ACME.",
        "Later: the price",
        "Later: the third",
    ]
    assert len(notes(app, thread)) == 1


async def test_an_admin_ends_the_wait_from_the_card(app: SlackHarness) -> None:
    thread = "721.000001"
    app.llm.add(
        calls(("cancel_orders", {"symbol": "ACME"}, "c1")),
        lambda request: text("Not cancelled."),
        echo,
    )
    await app.post(app.envelope(mention("cancel ACME", thread)))
    card = await a_card(app, thread)
    await waiting(app)
    await app.post(app.envelope(channel_message("the price?", "721.000002", thread_ts=thread)))
    await until(lambda: bool(notes(app, thread)), 3)
    deny = buttons(card)["Deny cancel_orders"]
    state = deny_with("not today", deny)
    assert await app.click("approval_deny", deny, "U0ADMIN", card.ts, state) == 200
    answers = await app.answered("C0CHAN", thread, count=2, within=30)
    assert [a.shown for a in answers] == ["Not cancelled.", "Later: the price"]
    assert trading_tools.RUNS == [] and len(notes(app, thread)) == 1


async def test_a_person_has_at_most_max_open_per_person_requests_open(
    slack_app: SlackHarness,
) -> None:
    trading_tools.RUNS.clear()
    app = await slack_app.start(**CONFIG, approval={"max_open_per_person": 2})
    app.slack.users = {u: {"id": u} for u in ("U0ALICE", "U0ADMIN")}
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 1}, "a1")),
        calls(("place_order", {"symbol": "ACME", "quantity": 2}, "a2")),
        calls(("place_order", {"symbol": "ACME", "quantity": 3}, "a3")),
        lambda request: text(tool_results(request)["a3"]),
    )
    first = await a_card_for(app, "730.000001")
    await a_card_for(app, "731.000001")
    await app.post(app.envelope(mention("buy 3", "732.000001")))
    [refused] = await app.answered("C0CHAN", "732.000001", within=20)
    told = json.loads(refused.shown)
    assert told["error"] == "NotConfirmed"
    assert told["message"] == (
        "place_order did not run and nobody was asked to approve it: <@U0ALICE> already has "
        "2 approval requests waiting for a decision, the most allowed at once (2). Those must "
        "be decided or expire before another call that needs approval can be asked for."
    )
    assert cards(app, "732.000001") == [] and trading_tools.RUNS == []
    requested = [
        e for e in await app.state.shared.audit.latest(50) if e.action == "approval_requested"
    ]
    assert len(requested) == 2  # the refused call asked nobody

    # A decided request leaves the count: the next call gets a card.
    app.llm.add(
        lambda request: text("Denied, fine."),
        calls(("place_order", {"symbol": "ACME", "quantity": 4}, "a4")),
    )
    deny = buttons(first)["Deny place_order"]
    assert await app.click("approval_deny", deny, "U0ALICE", first.ts) == 200
    await app.answered("C0CHAN", "730.000001", within=20)
    card = await a_card_for(app, "733.000001")
    assert "Approve place_order" in buttons(card)


async def a_card_for(app: SlackHarness, thread: str) -> Message:
    await app.post(app.envelope(mention("buy", thread)))
    return await a_card(app, thread)


async def test_a_request_is_kept_only_an_hour_past_its_deadline(app: SlackHarness) -> None:
    """Decided or not, a request and its arguments are kept ``approval.timeout_s`` + 1 h
    from when it opened (the audit keeps the decision without them), not 8 days."""
    thread = "740.000001"
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 5}, "o1")),
        lambda request: text(f"Done: {tool_results(request)['o1']}."),
    )
    await app.post(app.envelope(mention("buy 5", thread)))
    card = await a_card(app, thread)
    request_id = buttons(card)["Approve place_order"]
    key = app.state.keys.approval(request_id)
    timeout_s = 900  # the default approval.timeout_s
    assert 0 < await app.state.client.ttl(key) <= timeout_s + AFTER_DEADLINE_S
    assert await app.click("approval_approve", request_id, "U0ALICE", card.ts) == 200
    await app.answered("C0CHAN", thread, within=20)
    assert "quantity" in await app.state.client.hget(key, "arguments")  # the card's rewrite
    assert 0 < await app.state.client.ttl(key) <= timeout_s + AFTER_DEADLINE_S < KEEP_S / 100
    decided = [e for e in await app.state.shared.audit.latest(20) if e.kind == "approval"]
    assert {e.action for e in decided} == {"approval_requested", "approval_approved"}
    assert all("arguments" not in e.detail for e in decided)


async def test_a_turn_whose_request_is_gone_goes_on_and_runs_nothing(app: SlackHarness) -> None:
    """A request dropped while its turn waited (no worker looked before it expired and
    was let go of) does not hold the thread forever: the turn goes on, the call is refused."""
    thread = "741.000001"
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 6}, "o1")),
        lambda request: text(f"Hm: {tool_results(request)['o1']}"),
    )
    await app.post(app.envelope(mention("buy 6", thread)))
    card = await a_card(app, thread)
    await waiting(app)
    await app.state.client.delete(app.state.keys.approval(buttons(card)["Approve place_order"]))
    [answer] = await app.answered("C0CHAN", thread, within=20)  # its entry came round
    assert "no longer kept" in answer.shown and trading_tools.RUNS == []
