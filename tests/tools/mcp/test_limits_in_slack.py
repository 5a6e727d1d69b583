"""MCP servers inside the Slack app, bounded: sampling has a limit per tool call (counted
and audited), and a URL question shows only an https page, with its host beside it."""

from __future__ import annotations

import json
import logging

import pytest

from tests.fakes.llm_server import calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, mention
from tests.tools.mcp.test_capabilities_in_slack import asked, config, question


async def test_sampling_is_bounded_per_tool_call(slack_app: SlackHarness) -> None:
    """A tool that asks the model ten times in one call: five are answered (counted and
    audited), the sixth and later get an error, and the turn goes on."""
    app = await slack_app.start(**config(sampling=True))
    app.llm.add(
        calls(("wh_sample_repeatedly", {"times": 10}, "s1"), usage=(30, 5)),
        *[text(f"A{n}", usage=(10, 1)) for n in range(1, 6)],  # the server's requests
        lambda request: text(f"It says: {tool_results(request)['s1']}", usage=(40, 8)),
    )
    await app.post(app.envelope(mention("ask often", "511.000001", user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", "511.000001")
    assert answer.shown.startswith("It says: 5 answered (A1, A2, A3, A4, A5); 5 refused: ")
    assert "already made 5 sampling requests, the most one call may make" in answer.shown
    assert [m["content"] for r in app.llm.requests[1:6] for m in r["messages"]] == [
        "Q1",
        "Q2",
        "Q3",
        "Q4",
        "Q5",
    ]
    assert len(app.llm.requests) == 7  # the turn's two and five for the server
    usage = (await app.command("usage <@U0ADMIN>", user="U0ADMIN"))["text"]
    assert "today: 1 turns, 120 + 18 tokens" in usage  # the turn's 70 + 13, sampling's 50 + 5
    sampled = [
        (e.action, e.outcome)
        for e in await app.state.shared.audit.latest(20)
        if e.kind == "sampling"
    ]
    assert sorted(sampled) == [("wh_sample_repeatedly", "ok")] * 5 + [
        ("wh_sample_repeatedly", "over_limit")
    ]


async def test_only_an_https_page_is_a_link_with_its_host_beside_it(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tools.mcp")
    app = await slack_app.start(**config())
    app.llm.add(
        calls(
            ("wh_open_page", {"url": "http://accounts.example.com/login"}, "h1"),
            ("wh_open_page", {"url": "javascript:alert(document.cookie)"}, "j1"),
        ),
        lambda request: text(f"{tool_results(request)['h1']}, {tool_results(request)['j1']}"),
    )
    await app.post(app.envelope(mention("sign in", "512.000001", user="U0CLERK")))
    [answer] = await app.answered("C0CHAN", "512.000001")
    assert answer.shown == "page decline, page decline"  # the server heard a decline
    thread = json.dumps([m.blocks for m in app.slack.thread("C0CHAN", "512.000001")])
    assert "accounts.example.com" not in thread and "javascript" not in thread
    assert question(app, "512.000001") is None  # nobody was shown either page
    declined = [r.getMessage() for r in caplog.records if "not https" in r.getMessage()]
    assert sorted(declined) == [
        f"MCP server warehouse asked to send the person to a page that is not https ({s}); declined"
        for s in ("http", "javascript")
    ]  # the scheme only: an address may hold a token

    app.llm.add(
        calls(("wh_open_page", {"url": "https://accounts.example.com/login?next=%2F"}, "s1")),
        lambda request: text(tool_results(request)["s1"]),
    )
    await app.post(app.envelope(mention("sign in", "513.000001", user="U0CLERK")))
    message, question_id = await asked(app, "513.000001")
    [opened] = [e for b in message.blocks for e in b.get("elements", []) if "url" in e]
    assert opened["url"] == "https://accounts.example.com/login?next=%2F"
    assert opened["action_id"] == "elicit_accept"
    [host] = [
        e
        for b in message.blocks
        if b["type"] == "context"
        for e in b["elements"]
        if "accounts.example.com" in e["text"]
    ]
    assert host == {
        "type": "plain_text",
        "text": "The page is on accounts.example.com",
        "emoji": False,
    }
    await app.click("elicit_accept", question_id, "U0CLERK", message.ts)
    [answer] = await app.answered("C0CHAN", "513.000001")
    assert answer.shown == "page accept"
