"""What MCP servers may ask of the client, inside the Slack app: progress shown in the tool's
row, questions asked in the thread (a form or buttons, answered through Redis by whichever
replica gets the click, declined after a timeout), sampling with the bot's model (capped,
counted, audited), resources read with read_mcp_resource, and a server killed mid-turn."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_server import calls, text, tool_results
from tests.fakes.slack_harness import SlackHarness, is_progress, mention
from tests.fakes.slack_server import Message
from tests.waiting import until

STDIO = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"]}
ROLES = {
    "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
    "clerk": {"members": ["U0CLERK"], "tools": ["wh_*"]},
    "member": {"default": True, "tools": ["get_time"]},
}


def config(elicitation_timeout_s: float = 300, **server: Any) -> dict[str, Any]:
    mcp: dict[str, Any] = {
        # Its tools say nothing of what they change: an admin lets them run unasked here.
        "servers": {"warehouse": {**STDIO, "prefix": "wh_", "approval": "never", **server}},
        "elicitation_timeout_s": elicitation_timeout_s,
    }
    return {
        "roles": ROLES,
        "slack": {"streaming": False, "edit_interval_s": 0.2},
        "mcp": mcp,
    }


def question(app: SlackHarness, thread: str) -> Message | None:
    for message in app.slack.thread("C0CHAN", thread):
        for block in message.blocks:
            for element in block.get("elements", []):
                if str(element.get("action_id", "")).startswith("elicit_"):
                    return message
    return None


async def asked(app: SlackHarness, thread: str) -> tuple[Message, str]:
    """The question message once it is in the thread, and the id its buttons carry."""
    await until(lambda: question(app, thread) is not None, 15)
    message = question(app, thread)
    assert message is not None
    buttons = [e for b in message.blocks for e in b.get("elements", []) if "action_id" in e]
    return message, str(buttons[0]["value"])


def ephemeral(app: SlackHarness) -> list[str]:
    return [str(call.args["text"]) for call in app.slack.calls_to("response_url")]


def form_state(**values: dict[str, Any]) -> dict[str, Any]:
    return {"values": {f"elicit:{name}": {"value": value} for name, value in values.items()}}


async def test_progress_shows_in_the_tools_row(slack_app: SlackHarness, tmp_path: Path) -> None:
    app = await slack_app.start(**config())  # posted and edited: the tools as a context block
    go = tmp_path / "go"
    app.llm.add(calls(("wh_long_count", {"go_file": str(go)}, "p1")), text("Counted."))
    await app.post(app.envelope(mention("count", "500.000001", user="U0ADMIN")))

    def rows() -> str:
        return json.dumps(
            [m.blocks for m in app.slack.thread("C0CHAN", "500.000001")], ensure_ascii=False
        )

    # In a channel the row shows how far, in numbers; the server's words stay out.
    await until(lambda: "`wh_long_count` 40 %" in rows(), 15)
    assert "counting aisle" not in rows()
    go.touch()
    [answer] = await app.answered("C0CHAN", "500.000001")
    assert answer.shown == "Counted."
    assert "`wh_long_count` done in" in rows() and "counting aisle" not in rows()


async def test_progress_shows_on_the_task_card(slack_app: SlackHarness, tmp_path: Path) -> None:
    app = await slack_app.start(**{**config(), "slack": {"streaming": True}})
    go = tmp_path / "go"
    app.llm.add(calls(("wh_long_count", {"go_file": str(go)}, "p1")), text("Counted."))
    await app.post(app.envelope(mention("count", "501.000001", user="U0ADMIN")))

    def card() -> dict[str, Any]:
        cards = [m.tasks.get("p1") for m in app.slack.thread("C0CHAN", "501.000001")]
        return next((c for c in cards if c), {})

    await until(lambda: card().get("details") == "40 %", 15)  # a channel: no server words
    assert card()["status"] == "in_progress"
    go.touch()
    [answer] = await app.answered("C0CHAN", "501.000001")
    assert answer.shown == "Counted."
    assert card()["status"] == "complete" and len(app.slack.thread("C0CHAN", "501.000001")) == 1


async def test_a_form_is_asked_in_the_thread_and_the_answer_goes_back(
    slack_app: SlackHarness,
) -> None:
    # The call may take 1 s; waiting for the person does not count.
    app = await slack_app.start(**config(call_timeout_s=1))
    app.llm.add(
        calls(("wh_restock", {"item": "flour"}, "r1")),
        lambda request: text(f"Done: {tool_results(request)['r1']}"),
    )
    await app.post(app.envelope(mention("restock flour", "501.000001", user="U0CLERK")))
    message, question_id = await asked(app, "501.000001")
    assert message.text == "The MCP server warehouse asks: How should I restock flour?"
    inputs = {b["block_id"]: b for b in message.blocks if b["type"] == "input"}
    assert sorted(inputs) == ["elicit:count", "elicit:shelf", "elicit:size", "elicit:urgent"]
    assert inputs["elicit:shelf"]["hint"]["text"] == "Where it goes, e.g. A3"
    assert inputs["elicit:count"]["element"]["type"] == "number_input"
    assert inputs["elicit:size"]["element"]["type"] == "static_select"
    assert inputs["elicit:urgent"]["optional"] is True

    # Someone else may not answer; a form that does not fit is refused with what to fix.
    assert await app.click("elicit_submit", question_id, "U0BOB", message.ts) == 200
    await until(lambda: len(ephemeral(app)) == 1, 5)
    assert ephemeral(app)[0] == "Only <@U0CLERK> can answer this question."
    bad = form_state(shelf={"type": "plain_text_input", "value": "A3"})
    await app.click("elicit_submit", question_id, "U0CLERK", message.ts, bad)
    await until(lambda: len(ephemeral(app)) == 2, 5)
    assert ephemeral(app)[1] == "Please fix this and submit again: Count is required"
    await asyncio.sleep(1.2)  # longer than the call's timeout: the clock stopped meanwhile

    good = form_state(
        shelf={"type": "plain_text_input", "value": "A3"},
        count={"type": "number_input", "value": "5"},
        urgent={"type": "radio_buttons", "selected_option": {"value": "true"}},
        size={"type": "static_select", "selected_option": {"value": "large"}},
    )
    await app.click("elicit_submit", question_id, "U0CLERK", message.ts, good)
    [answer] = await app.answered("C0CHAN", "501.000001")
    assert answer.shown == (
        "Done: restocking flour: {'shelf': 'A3', 'count': 5, 'urgent': True, 'size': 'large'}"
    )
    closed = app.slack.messages[("C0CHAN", message.ts)]
    assert "Answered by <@U0CLERK>" in closed.text
    assert not any(b["type"] in ("input", "actions") for b in closed.blocks)
    # A click on the closed question is told so.
    await app.click("elicit_submit", question_id, "U0CLERK", message.ts, good)
    await until(lambda: len(ephemeral(app)) == 3, 5)
    assert ephemeral(app)[2] == "This question is no longer open."


async def test_a_question_without_fields_is_buttons(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**config())
    app.llm.add(
        calls(("wh_confirm_cleanup", {}, "c1")),
        lambda request: text(tool_results(request)["c1"]),
    )
    await app.post(app.envelope(mention("clean up", "502.000001", user="U0CLERK")))
    message, question_id = await asked(app, "502.000001")
    buttons = [
        e["action_id"] for b in message.blocks for e in b.get("elements", []) if "action_id" in e
    ]
    assert buttons == ["elicit_accept", "elicit_decline"]
    await app.click("elicit_accept", question_id, "U0CLERK", message.ts)
    [answer] = await app.answered("C0CHAN", "502.000001")
    assert answer.shown == "cleanup accept"


async def test_an_unanswered_question_is_declined_after_its_timeout(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(**config(elicitation_timeout_s=1))
    app.llm.add(
        calls(("wh_confirm_cleanup", {}, "c1")),
        lambda request: text(tool_results(request)["c1"]),
    )
    await app.post(app.envelope(mention("clean up", "503.000001", user="U0CLERK")))
    message, question_id = await asked(app, "503.000001")
    [answer] = await app.answered("C0CHAN", "503.000001")
    assert answer.shown == "cleanup decline"
    await until(lambda: "No answer in time" in app.slack.messages[("C0CHAN", message.ts)].text, 5)
    await app.click("elicit_accept", question_id, "U0CLERK", message.ts)
    await until(lambda: bool(ephemeral(app)), 5)
    assert ephemeral(app) == ["This question is no longer open."]


async def test_sampling_uses_the_bots_model_capped_counted_and_audited(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(**config(sampling=True, sampling_max_tokens=50))
    app.llm.add(
        calls(("wh_ask_model", {"question": "What colour is flour?"}, "s1"), usage=(30, 5)),
        text("White", usage=(12, 1)),  # the server's sampling request
        lambda request: text(f"It says: {tool_results(request)['s1']}", usage=(40, 8)),
    )
    await app.post(app.envelope(mention("ask", "504.000001", user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", "504.000001")
    assert answer.shown == "It says: the model (fake-model) said: White"
    sampling = app.llm.requests[1]
    assert sampling["max_tokens"] == 50  # the server asked for 5000
    assert sampling["messages"] == [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "What colour is flour?"},
    ]
    assert "tools" not in sampling
    usage = (await app.command("usage <@U0ADMIN>", user="U0ADMIN"))["text"]
    assert "today: 1 turns, 82 + 14 tokens" in usage  # the turn's 70 + 13 and sampling's 12 + 1
    audit = (await app.command("audit 5", user="U0ADMIN"))["text"]
    assert "<@U0ADMIN> sampling `wh_ask_model` `mcp warehouse` → ok" in audit


async def test_without_the_switch_a_server_cannot_sample(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**config())
    app.llm.add(
        calls(("wh_ask_model", {"question": "Colour?"}, "s1")),
        lambda request: text(tool_results(request)["s1"]),
    )
    await app.post(app.envelope(mention("ask", "505.000001", user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", "505.000001")
    assert json.loads(answer.shown)["error"] == "ToolError"
    assert "Sampling not supported" in json.loads(answer.shown)["message"]
    assert len(app.llm.requests) == 2  # the bot's model was never asked for the server


async def test_resources_are_read_with_read_mcp_resource_under_the_role_policy(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(**config())
    app.llm.add(
        calls(("wh_report_link", {}, "l1")),
        calls(
            ("read_mcp_resource", {"server": "warehouse", "uri": "warehouse://notes/today"}, "r1")
        ),
        lambda request: text(tool_results(request)["r1"]),
    )
    await app.post(app.envelope(mention("notes", "506.000001", user="U0ADMIN")))
    [answer] = await app.answered("C0CHAN", "506.000001")
    assert answer.shown == "Flour delivery at 10:00. Sugar is low."
    linked = tool_results(app.llm.requests[1])["l1"]
    assert "warehouse://notes/today" in linked and "read_mcp_resource" in linked
    assert "read_mcp_resource" in app.llm.offered_tools(0)
    # The clerk's role ("wh_*") does not include it: never offered, and refused.
    app.llm.add(
        calls(("read_mcp_resource", {"server": "warehouse", "uri": "warehouse://x"}, "r2")),
        lambda request: text(tool_results(request)["r2"]),
    )
    await app.post(app.envelope(mention("notes", "507.000001", user="U0CLERK")))
    [refused] = await app.answered("C0CHAN", "507.000001")
    assert json.loads(refused.shown)["error"] == "ToolNotAllowed"
    assert "read_mcp_resource" not in app.llm.offered_tools(-2)


async def test_a_server_killed_mid_turn_is_unavailable_and_the_turn_goes_on(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    app = await slack_app.start(**config(call_timeout_s=30))  # the default ping interval
    assert app.services is not None
    connection = app.services.tools.mcp.connections["warehouse"]
    pid = int(await connection.tools["wh_server_pid"].invoke({}))
    app.llm.add(
        calls(("wh_slow_report", {"seconds": 25}, "k1")),
        lambda request: text(f"Sorry: {tool_results(request)['k1']}"),
        calls(("wh_lookup_stock", {"item": "flour"}, "k2")),
        lambda request: text(f"Now: {tool_results(request)['k2']}"),
    )
    await app.post(app.envelope(mention("report", "508.000001", user="U0ADMIN")))
    await app.llm.wait_for_requests(1)
    await until(lambda: "running" in _progress(app, "508.000001"), 10)
    started = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    [answer] = await app.answered("C0CHAN", "508.000001")
    assert time.monotonic() - started < 5  # not the 25 s call, nor a ping
    assert json.loads(answer.shown.removeprefix("Sorry: ")) == {
        "error": "McpServerUnavailable",
        "message": "The MCP server warehouse is unavailable right now.",
    }
    await until(lambda: "wh_lookup_stock" in connection.tools, 10)
    await app.post(app.envelope(mention("again", "509.000001", user="U0ADMIN")))
    [again] = await app.answered("C0CHAN", "509.000001")
    assert again.shown == "Now: flour: 12 bags"


async def test_admins_see_each_tools_annotations(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**config())
    everything = (await app.command("tools all", user="U0ADMIN"))["text"]
    assert "• `wh_count_pallets` [mcp warehouse] (read-only, idempotent) — on" in everything
    assert "• `wh_delete_everything` [mcp warehouse] (destructive, closed-world) — on" in everything
    assert "• `read_mcp_resource` [mcp] (read-only, open-world) — on" in everything


def _progress(app: SlackHarness, thread: str) -> str:
    return next((m.text for m in app.slack.thread("C0CHAN", thread) if is_progress(m)), "")


async def test_a_stop_withdraws_an_open_question(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**config())
    app.llm.add(calls(("wh_confirm_cleanup", {}, "c1")), text("never asked"))
    await app.post(app.envelope(mention("clean up", "510.000001", user="U0CLERK")))
    message, _ = await asked(app, "510.000001")
    stopped = {  # Slack's own stop button (agent sessions)
        "type": "agent_session_stopped",
        "channel": "C0CHAN",
        "thread_ts": "510.000001",
        "user": "U0CLERK",
        "event_ts": "510.000009",
    }
    assert (await app.post(app.envelope(stopped)))[0] == 200
    [answer] = await app.answered("C0CHAN", "510.000001")
    assert answer.shown == "Stopped before the answer was finished."
    await until(lambda: "withdrawn" in app.slack.messages[("C0CHAN", message.ts)].text, 5)
