"""Nothing restricted is shown to the whole channel, end to end: signed requests, the fake
Slack (which records every call), the fake LLM, the real Redis.

In a channel a tool call's task card shows its name, state and duration, never its output,
its error's words or its progress's words; the output opens privately, in a modal, for the
clicker alone and only for the tools the policy lets them use. In the person's DM with the
bot the output shows on the card as before. A call waiting for approval shows "waiting for
approval" (pending), never complete, and once the turn has gone on the card shows how the
call ended."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.slack.blocks.approval_card import APPROVE_ACTION, DENY_ACTION
from bot.slack.blocks.tool_output import SHOW_OUTPUT_ACTION
from tests.bot.slack.outbound.test_approvals import waiting
from tests.fakes import payroll_tools, trading_tools
from tests.fakes.llm_server import calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, direct_message, is_approval_card, mention
from tests.fakes.slack_server import Call, Message
from tests.waiting import until

SECRET = payroll_tools.SECRET
ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "member": {"default": True, "tools": ["calculate", "get_price", "place_order"]},
}
CONFIG: dict[str, Any] = {
    "roles": ROLES,
    "tools": {"modules": ["tests.fakes.payroll_tools", "tests.fakes.trading_tools"]},
}


@pytest.fixture(autouse=True)
async def progress_gate() -> AsyncIterator[asyncio.Event]:
    """search_payroll finishes once the test has seen its progress shown."""
    payroll_tools.progress_seen = gate = asyncio.Event()
    gate.set()  # by default it does not wait
    yield gate
    payroll_tools.progress_seen = None


def to_channel(app: SlackHarness, channel: str) -> list[Call]:
    """Every Web API call that writes to or about ``channel`` (chat.*, statuses, ...)."""
    return [
        c for c in app.slack.calls if channel in (c.args.get("channel"), c.args.get("channel_id"))
    ]


def said(calls_made: list[Call]) -> str:
    return json.dumps([c.args for c in calls_made], ensure_ascii=False)


def show_output_value(message: Message) -> str:
    [value] = [
        element["value"]
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
        if element.get("action_id") == SHOW_OUTPUT_ACTION
    ]
    return str(value)


def views_shown(app: SlackHarness) -> list[str]:
    """What each filled-in output modal showed, in order."""
    return [
        json.dumps(
            c.args["view"] if isinstance(c.args["view"], dict) else json.loads(c.args["view"])
        )
        for c in app.slack.calls_to("views.update")
    ]


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "posted"])
async def test_an_admins_restricted_output_never_reaches_the_channel(
    slack_app: SlackHarness, progress_gate: asyncio.Event, streaming: bool
) -> None:
    app = await slack_app.start(**CONFIG, slack={"streaming": streaming})
    progress_gate.clear()  # search_payroll waits until its progress has been shown
    app.llm.add(
        calls(
            ("search_payroll", {"name": "Bob"}, "p1"),
            ("check_payroll", {"name": "Bob"}, "e1"),
            ("calculate", {"expression": "6*7"}, "c1"),
        ),
        text("Done: Bob's pay is on file."),
    )
    await app.post(app.envelope(mention("what does Bob earn?", "900.000001", user="U0ADMIN")))
    # Its progress showed in the channel: how far, in numbers, not the tool's words.
    await until(lambda: "50 %" in said(to_channel(app, "C0CHAN")), 15)
    progress_gate.set()
    [answer] = await app.answered("C0CHAN", "900.000001")
    # The tools ran and the model read the marker: it was there to leak.
    results = tool_results(app.llm.requests[1])
    assert SECRET in results["p1"] and SECRET in results["e1"] and results["c1"] == "42"

    sent = to_channel(app, "C0CHAN")
    assert {c.method for c in sent} >= (
        {"chat.startStream", "chat.appendStream", "chat.stopStream"}
        if streaming
        else {"chat.postMessage", "chat.update"}
    )
    assert SECRET not in said(sent)  # output, error message, progress words: none of it
    assert "7,000" not in said(sent) and "ledger" not in said(sent)
    if streaming:
        cards = answer.tasks
        assert cards["p1"]["status"] == "complete" and "output" not in cards["p1"]
        assert cards["e1"]["status"] == "error"
        assert cards["e1"]["output"] == "failed (ToolError)"  # its kind, not its words
        assert "output" not in cards["c1"]  # not even an unrestricted tool's
    else:
        rows = json.dumps(answer.blocks)
        assert ":warning: `check_payroll` failed (ToolError)" in rows
        assert ":white_check_mark: `search_payroll` done in" in rows
    assert show_output_value(answer)  # the output opens privately instead


async def test_in_a_dm_the_output_shows_on_the_card(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG)
    app.llm.add(calls(("search_payroll", {"name": "Bob"}, "p1")), text("Done."))
    await app.post(app.envelope(direct_message("Bob's pay?", "901.000001", "D0ADMIN", "U0ADMIN")))
    [answer] = await app.answered("D0ADMIN", "901.000001")
    assert SECRET in answer.tasks["p1"]["output"]  # the person alone reads it
    assert SHOW_OUTPUT_ACTION not in json.dumps(answer.blocks)  # nothing to open


async def test_show_output_opens_each_output_only_for_people_who_may_use_its_tool(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(**CONFIG)
    app.slack.users = {u: {"id": u} for u in ("U0ADMIN", "U0ALICE")}
    app.llm.add(
        calls(
            ("search_payroll", {"name": "Bob"}, "p1"), ("calculate", {"expression": "6*7"}, "c1")
        ),
        text("Done."),
        calls(("search_payroll", {"name": "Eve"}, "p2")),
        text("Done too."),
    )
    await app.post(app.envelope(mention("Bob's pay, and 6*7?", "902.000001", user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", "902.000001")
    value = show_output_value(answer)
    before = len(to_channel(app, "C0CHAN"))

    # The admin may use both tools: both outputs, in a modal only they see.
    assert await app.click(SHOW_OUTPUT_ACTION, value, "U0ADMIN", answer.ts) == 200
    await until(lambda: len(views_shown(app)) == 1)
    [opened] = app.slack.calls_to("views.open")
    assert opened.args["trigger_id"] == "t"  # opened at once, on the click's trigger
    assert SECRET in views_shown(app)[0] and "42" in views_shown(app)[0]
    [update] = app.slack.calls_to("views.update")
    assert update.args["view_id"]  # the modal opened, filled in

    # A member may use calculate only: its output, and a refusal for search_payroll.
    await app.click(SHOW_OUTPUT_ACTION, value, "U0ALICE", answer.ts)
    await until(lambda: len(views_shown(app)) == 2)
    alices = views_shown(app)[1]
    assert SECRET not in alices and "42" in alices
    assert "Not shown: you may not use `search_payroll` here." in alices

    # A guest from another workspace (Slack Connect) gets the default role's view.
    await app.click(SHOW_OUTPUT_ACTION, value, "U0GUEST", answer.ts, team="T0OTHER")
    await until(lambda: len(views_shown(app)) == 3)
    assert SECRET not in views_shown(app)[2] and "42" in views_shown(app)[2]

    # A turn with only the restricted tool: the member is refused outright.
    await app.post(app.envelope(mention("Eve's pay?", "902.000002", user="U0ADMIN")))
    [second] = await app.answered("C0CHAN", "902.000002")
    await app.click(SHOW_OUTPUT_ACTION, show_output_value(second), "U0ALICE", second.ts)
    await until(lambda: len(views_shown(app)) == 4)
    assert SECRET not in views_shown(app)[3]
    assert "Sorry, only people who may use `search_payroll`" in views_shown(app)[3]
    # None of it went to the channel.
    assert SECRET not in said(to_channel(app, "C0CHAN")[before:])
    # Every look is audited: who, what they were shown, what they were refused.
    looks = [e for e in await app.state.shared.audit.latest(50) if e.kind == "output"]
    assert sorted((e.actor, e.action, e.target) for e in looks) == [
        ("U0ADMIN", "output_shown", "calculate, search_payroll"),
        ("U0ALICE", "output_refused", "search_payroll"),
        ("U0ALICE", "output_shown", "calculate"),
        ("U0GUEST", "output_shown", "calculate"),
    ]
    assert all(SECRET not in json.dumps(e.detail) for e in looks)


def buttons(card: Message, action: str) -> list[str]:
    return [
        str(element["value"])
        for block in card.blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or ()
        if element.get("action_id") == action
    ]


def chunks_for(app: SlackHarness, call_id: str) -> list[dict[str, Any]]:
    """Every task chunk for ``call_id`` sent to a stream so far, in order."""
    found = []
    for call in app.slack.calls:
        if call.method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
            found += [c for c in call.args.get("chunks") or () if c.get("id") == call_id]
    return found


async def test_a_waiting_calls_card_says_so_and_moves_on_once_approved(
    slack_app: SlackHarness,
) -> None:
    trading_tools.RUNS.clear()
    app = await slack_app.start(**CONFIG)
    app.llm.add(
        calls(
            ("get_price", {"symbol": "ACME"}, "p1"),
            ("place_order", {"symbol": "ACME", "quantity": 2}, "o1"),
        ),
        lambda request: text(f"Done: {tool_results(request)['o1']}."),
    )
    await app.post(app.envelope(mention("buy 2 ACME", "903.000001")))
    await until(lambda: any(is_approval_card(m) for m in app.slack.thread("C0CHAN", "903.000001")))
    await waiting(app)
    thread = app.slack.thread("C0CHAN", "903.000001")
    [card] = [m for m in thread if is_approval_card(m)]
    [before] = [m for m in thread if float(m.ts) < float(card.ts)]
    # Streamed while the turn ran (the only stream so far): the waiting call's card was
    # never complete.
    assert len(app.slack.calls_to("chat.startStream")) == 1
    sent = chunks_for(app, "o1")
    assert sent and all(c["status"] in ("in_progress", "pending") for c in sent)
    assert sent[-1]["status"] == "pending" and sent[-1]["details"].startswith(
        "waiting for approval"
    )
    assert before.tasks["o1"]["status"] == "pending" and before.tasks["p1"]["status"] == "complete"

    # While it waits, the output of what ran opens from the turn's journal.
    await app.click(SHOW_OUTPUT_ACTION, show_output_value(before), "U0ALICE", before.ts)
    await until(lambda: len(views_shown(app)) == 1)
    assert "ACME: 101.5" in views_shown(app)[0]

    [approve] = buttons(card, APPROVE_ACTION)
    await app.click(APPROVE_ACTION, approve, "U0ALICE", card.ts)
    answers = await app.answered("C0CHAN", "903.000001", within=20)
    assert answers[-1].shown == "Done: bought 2 ACME." and trading_tools.RUNS[-1].startswith(
        "place_order"
    )
    # The message set aside moved on: the call it waited for shows how it ended.
    [rewritten] = [c for c in app.slack.calls_to("chat.update") if c.args["ts"] == before.ts]
    rows = json.dumps(rewritten.args["blocks"])
    assert ":white_check_mark: `place_order` done in" in rows and "waiting" not in rows
    assert not before.open_tasks and "waiting" not in json.dumps(before.blocks)


async def test_a_denied_calls_card_moves_on_to_failed(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG, slack={"streaming": False})
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 3}, "o1")),
        text("Not bought."),
    )
    await app.post(app.envelope(mention("buy 3 ACME", "904.000001")))
    await until(lambda: any(is_approval_card(m) for m in app.slack.thread("C0CHAN", "904.000001")))
    await waiting(app)
    thread = app.slack.thread("C0CHAN", "904.000001")
    [card] = [m for m in thread if is_approval_card(m)]
    [before] = [m for m in thread if float(m.ts) < float(card.ts)]
    assert ":lock: `place_order` waiting for approval" in json.dumps(before.blocks)
    [deny] = buttons(card, DENY_ACTION)
    await app.click(DENY_ACTION, deny, "U0ALICE", card.ts)
    await app.answered("C0CHAN", "904.000001", within=20)
    await until(lambda: "waiting for approval" not in json.dumps(before.blocks))
    assert ":warning: `place_order` failed (NotConfirmed)" in json.dumps(before.blocks)
