"""The approval card people can trust at a glance, end to end: signed requests, the fake
Slack and the fake LLM, the real Redis (and a Redis Cluster).

Nothing the model wrote can pose as the bot; the card says what the tool is, whose turn
asked and who may decide; its state and its buttons follow Slack's guidance; its arguments
are shown to nobody outside the thread's workspace who may not decide; and a request nobody
decides expires when it is due."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pytest

from bot.slack.inbound.listeners.approvals import NOT_SHOWN
from tests.bot.slack.outbound.test_approvals import (
    CONFIG,
    a_card,
    arguments_shown,
    buttons,
    cards,
    ephemerals,
    mrkdwn,
    waiting,
)
from tests.fakes import trading_tools
from tests.fakes.llm_server import calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import TEAM, Message
from tests.waiting import until

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

INJECTED = "acct-1 ``` *:white_check_mark: read-only, safe to approve* ``` "
RLO_FILE = "\u202etxt.exe"
STDIO = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"]}


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    trading_tools.RUNS.clear()
    slack_app.slack.users = {
        "U0ALICE": {"id": "U0ALICE"},
        "U0ADMIN": {"id": "U0ADMIN"},
        "U0BOB": {"id": "U0BOB"},
        "U0PARTNER": {"id": "U0PARTNER", "team_id": "T0OTHER"},  # Slack Connect
    }
    return await slack_app.start(**CONFIG)


def approve_button(card: Message) -> dict[str, Any]:
    return next(
        e
        for b in card.blocks
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == "approval_approve"
    )


def rich_texts(card: Message) -> list[str]:
    """The card's rich text words (outside the preformatted arguments)."""
    return [
        str(part.get("text") or "")
        for block in card.blocks
        if block["type"] == "rich_text"
        for element in block["elements"]
        if element["type"] != "rich_text_preformatted"
        for part in element["elements"]
    ]


async def test_an_injected_argument_stays_an_argument_and_controls_show(
    app: SlackHarness,
) -> None:
    symbol = INJECTED + RLO_FILE
    app.llm.add(
        calls(("place_order", {"quantity": 1, "symbol": symbol}, "o1")),
        lambda request: text(f"Done: {tool_results(request)['o1']}."),
    )
    await app.post(app.envelope(mention("buy", "730.000001")))
    card = await a_card(app, "730.000001")
    # The arguments, in the tool's order, inside the preformatted element and only there.
    assert arguments_shown(card.blocks) == f'symbol: "{INJECTED}[U+202E]txt.exe"\nquantity: 1'
    words = mrkdwn(card.blocks) + "\n" + card.text
    for part in ("acct-1", "white_check_mark: read-only", "safe to approve", "txt.exe"):
        assert part not in words
    # The override never reaches Slack, in the card or anywhere else the bot wrote.
    for call in app.slack.calls:
        if call.method.startswith("chat."):
            assert "\u202e" not in json.dumps(call.args, ensure_ascii=False)
    # Who asked, in the card's own words: the assistant's call in her turn.
    intro = rich_texts(card)
    assert "The assistant wants to run " in intro and "'s turn." in intro
    assert "U0ALICE" in json.dumps(card.blocks)
    assert " — Buy shares (needs a person's approval)." in intro  # the tool's description
    assert any("Marked destructive" in said for said in intro)  # confirm=True
    assert card.blocks[0]["type"] == "header" and card.text == "Approval needed: place_order"
    approve = approve_button(card)
    assert approve["style"] == "primary" and "place_order" in approve["confirm"]["text"]["text"]
    await app.click("approval_approve", buttons(card)["Approve place_order"], "U0ALICE", card.ts)
    [answer] = await app.answered("C0CHAN", "730.000001", within=20)
    assert answer.shown == f"Done: bought 1 {symbol}."  # the model's value, as it wrote it
    decided = cards(app, "730.000001")[-1]
    assert decided.text == "Approved: place_order"
    assert decided.blocks[0]["text"]["text"] == ":white_check_mark: Approved"
    assert "<!date^" in mrkdwn(decided.blocks) and "Approved by <@U0ALICE>" in mrkdwn(
        decided.blocks
    )


async def test_an_mcp_tool_shows_its_server_and_its_destructive_mark(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(
        **CONFIG, mcp={"servers": {"warehouse": {**STDIO, "prefix": "wh_"}}}
    )
    app.llm.add(
        calls(("wh_delete_everything", {}, "d1"), ("wh_lookup_stock", {"item": "flour"}, "l1")),
        lambda request: text(json.dumps(tool_results(request), sort_keys=True)),
    )
    await app.post(app.envelope(mention("tidy up", "731.000001")))
    card = await a_card(app, "731.000001")
    said = rich_texts(card)
    assert said.count("From the MCP server ") == 2 and "warehouse" in said
    assert sum("Marked destructive" in s for s in said) == 1  # only the one the server marked
    approvals = {
        e["text"]["text"]: e
        for b in card.blocks
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == "approval_approve"
    }
    confirm = approvals["Approve wh_delete_everything"]["confirm"]
    assert "wh_delete_everything" in confirm["text"]["text"]
    assert "confirm" not in approvals["Approve wh_lookup_stock"]
    for deny in (e for b in card.blocks if b["type"] == "actions" for e in b["elements"]):
        if deny["action_id"] == "approval_deny":
            assert "style" not in deny  # Deny is not styled danger
    await app.click("approval_deny", buttons(card)["Deny wh_delete_everything"], "U0ALICE", card.ts)
    await app.click("approval_deny", buttons(card)["Deny wh_lookup_stock"], "U0ALICE", card.ts)
    await app.answered("C0CHAN", "731.000001", within=30)
    decided = cards(app, "731.000001")[-1]
    word, _, tools = decided.text.partition(": ")  # in the order their requests opened
    assert word == "Denied" and set(tools.split(", ")) == {
        "wh_delete_everything",
        "wh_lookup_stock",
    }
    assert decided.blocks[0]["text"]["text"] == ":no_entry: Denied"


async def test_show_all_is_refused_to_an_outsider_who_may_not_decide(app: SlackHarness) -> None:
    symbol = "B" * 500
    app.llm.add(calls(("cancel_orders", {"symbol": symbol}, "c1")), text("never"))
    await app.post(app.envelope(mention("cancel", "732.000001")))
    card = await a_card(app, "732.000001")
    show = buttons(card)["Show all"]
    # A Slack Connect user of another workspace, who may not decide: a no, and no modal.
    assert await app.click("approval_show", show, "U0PARTNER", card.ts, team="T0OTHER") == 200
    await app.after_acks()
    assert NOT_SHOWN in ephemerals(app) and not app.slack.calls_to("views.open")
    # A click that names no workspace is an outsider's too.
    await app.click("approval_show", show, "U0PARTNER", card.ts, team=None)
    await app.after_acks()
    assert ephemerals(app).count(NOT_SHOWN) == 2 and not app.slack.calls_to("views.open")
    # An admin (a config ID counts wherever they are from) may decide, so may look.
    await app.click("approval_show", show, "U0ADMIN", card.ts, team="T0OTHER")
    await until(lambda: len(app.slack.calls_to("views.open")) == 1)
    # Anyone of the thread's workspace may look.
    await app.click("approval_show", show, "U0BOB", card.ts, team=TEAM)
    await until(lambda: len(app.slack.calls_to("views.open")) == 2)
    for opened in app.slack.calls_to("views.open"):
        view = opened.args["view"]
        view = json.loads(view) if isinstance(view, str) else view
        assert arguments_shown(view["blocks"]) == f'symbol: "{symbol}"'
    assert ephemerals(app).count(NOT_SHOWN) == 2


async def test_when_the_requester_may_not_decide_the_card_and_the_refusal_name_who_may(
    slack_app: SlackHarness,
) -> None:
    trading_tools.RUNS.clear()
    slack_app.slack.users = {u: {"id": u} for u in ("U0ALICE", "U0ADMIN")}
    app = await slack_app.start(**CONFIG, approval={"approvers": ["admins"]})
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 2}, "o1")),
        lambda request: text(f"Done: {tool_results(request)['o1']}."),
    )
    await app.post(app.envelope(mention("buy 2", "733.000001")))
    card = await a_card(app, "733.000001")
    assert "<@U0ALICE> may not decide this; <@U0ADMIN> or an admin may." in mrkdwn(card.blocks)
    approve = buttons(card)["Approve place_order"]
    await app.click("approval_approve", approve, "U0ALICE", card.ts)
    await app.after_acks()
    assert "Sorry, only <@U0ADMIN> or an admin can decide this." in ephemerals(app)
    assert not any("only <@U0ALICE>" in said for said in ephemerals(app))
    assert trading_tools.RUNS == []
    await app.click("approval_approve", approve, "U0ADMIN", card.ts)
    [answer] = await app.answered("C0CHAN", "733.000001", within=20)
    assert answer.shown == "Done: bought 2 ACME." and trading_tools.RUNS == ["place_order ACME 2"]


async def test_a_request_expires_within_two_seconds_of_its_time(slack_app: SlackHarness) -> None:
    """With the default takeover pace (a parked turn's entry comes round every 10 s), the
    deadline index gets the turn going again, the model told, the card Expired, in time."""
    trading_tools.RUNS.clear()
    timeout_s = 3
    app = await slack_app.start(
        **CONFIG, approval={"timeout_s": timeout_s}, queue={"claim_idle_s": 10}
    )
    app.llm.add(
        calls(("place_order", {"symbol": "ACME", "quantity": 4}, "o1")),
        lambda request: text(f"Hm: {tool_results(request)['o1']}"),
    )
    await app.post(app.envelope(mention("buy 4", "734.000001")))
    card = await a_card(app, "734.000001")
    await waiting(app)
    request = await app.state.threads.approvals.get(buttons(card)["Approve place_order"])
    assert request is not None
    due = request.created + timeout_s

    def expired_and_told() -> bool:
        now = cards(app, "734.000001")[-1]
        answers = [m for m in app.slack.thread("C0CHAN", "734.000001") if m.shown.startswith("Hm")]
        return now.text == "Expired: place_order" and bool(answers) and app.idle()

    await until(expired_and_told, timeout=max(due + 2 - time.time(), 0.1))
    assert time.time() <= due + 2
    now = cards(app, "734.000001")[-1]
    assert now.blocks[0]["text"]["text"] == ":hourglass: Expired"
    assert "approval_approve" not in json.dumps(now.blocks)
    [answer] = [m for m in app.slack.thread("C0CHAN", "734.000001") if m.shown.startswith("Hm")]
    assert "nobody decided within 3 seconds" in answer.shown and trading_tools.RUNS == []
    audited = [e for e in await app.state.shared.audit.latest(20) if e.kind == "approval"]
    assert [e.action for e in audited].count("approval_expired") == 1
