"""Slack's agent experience end to end: a one-tool turn in four Slack calls, an answer that
never waits for an edit window, agent sessions and their fallback, loading messages,
feedback buttons and `/agent feedback`, and the agent pane's channel as the model's context."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from tests.fakes.llm_server import calls, text
from tests.fakes.slack_harness import SlackHarness, button_click, mention
from tests.fakes.slack_server import TEAM
from tests.waiting import until

ADMINS: dict[str, Any] = {
    "roles": {
        "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
        "member": {"default": True, "tools": ["*"]},
    }
}


def slack_calls(app: SlackHarness, after: int = 0) -> Counter[str]:
    return Counter(c.method for c in app.slack.calls[after:] if c.method != "auth.test")


async def test_a_one_tool_turn_makes_four_slack_calls(slack_app: SlackHarness) -> None:
    app = await slack_app.start()
    app.llm.add(calls(("calculate", {"expression": "6*7"}, "c1")), text("It is 42."))
    await app.post(app.envelope(mention("6*7?", "700.000001")))
    [answer] = await app.answered("C0CHAN", "700.000001")
    assert slack_calls(app) == Counter(
        {
            "agents.sessions.setStatus": 1,  # processing
            "chat.startStream": 1,  # the task card, running
            "chat.appendStream": 1,  # the task card, done
            "chat.stopStream": 1,  # the answer, the feedback buttons, the session active
            "users.info": 1,  # the author's name: once per person, then cached
        }
    )
    assert answer.text == "It is 42."
    assert answer.tasks["c1"]["status"] == "complete"
    # Under the answer: "Show output" (a channel: the card does not show it), the feedback.
    assert [b["type"] for b in answer.blocks] == ["actions", "context_actions"]
    assert app.slack.session("C0CHAN", "700.000001") == "active"
    [stop] = app.slack.calls_to("chat.stopStream")
    assert stop.args["session_status"] == "active"


async def test_the_answer_never_waits_for_an_edit_window(slack_app: SlackHarness) -> None:
    # Edits of one message at most every 10 s; the tool's card and the answer come within
    # a second of each other: the answer must not wait for the window.
    app = await slack_app.start(slack={"streaming": False, "edit_interval_s": 10})
    app.llm.add(calls(("calculate", {"expression": "1+1"}, "c1")), text("Two."))
    started = time.monotonic()
    await app.post(app.envelope(mention("1+1?", "701.000001")))
    [answer] = await app.answered("C0CHAN", "701.000001", within=8)
    assert time.monotonic() - started < 8  # well inside the 10 s window
    assert answer.shown == "Two." and "Used 1 tool" in json.dumps(answer.blocks)
    assert len(app.slack.thread("C0CHAN", "701.000001")) == 1


async def test_without_agent_sessions_the_assistant_status_with_loading_messages(
    slack_app: SlackHarness,
) -> None:
    loading = ["Looking in the warehouse…", "Counting the bags…"]
    app = await slack_app.start(slack={"loading_messages": loading})
    app.slack.agent_sessions = False
    for n in (1, 2):
        app.llm.add(text(f"Answer {n}."))
        await app.post(app.envelope(mention(f"question {n}", f"702.00000{n}")))
        await app.answered("C0CHAN", f"702.00000{n}")
    [status, *_] = app.slack.calls_to("assistant.threads.setStatus")
    assert status.args["loading_messages"] == loading
    # Slack said no agent sessions once: the next turn did not ask again.
    assert len(app.slack.calls_to("agents.sessions.setStatus")) == 1
    assert len(app.slack.calls_to("assistant.threads.setStatus")) == 2


async def test_feedback_is_kept_audited_and_shown_to_admins(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**ADMINS)
    app.llm.add(calls(("calculate", {"expression": "2+2"}, "c1")), text("Four."))
    await app.post(app.envelope(mention("2+2?", "703.000001", user="U0ALICE")))
    [answer] = await app.answered("C0CHAN", "703.000001")
    buttons = answer.blocks[-1]["elements"][0]
    down = buttons["negative_button"]["value"]
    payload = button_click("answer_feedback", down, "U0ALICE", answer.ts, app.slack.response_url)
    payload["message"]["thread_ts"] = "703.000001"
    payload["actions"][0]["type"] = "feedback_buttons"
    assert await app.click_payload(payload) == 200
    assert app.services is not None
    state = app.services.state
    [kept] = await state.shared.feedback.latest_negative(TEAM, 5)
    assert (kept.user, kept.verdict, kept.message_ts) == ("U0ALICE", "down", answer.ts)
    assert kept.model == "fake-model" and kept.tools == ["calculate"] and kept.turn
    [audited] = [e for e in await state.shared.audit.latest(10) if e.kind == "feedback"]
    assert (audited.actor, audited.action, audited.target) == ("U0ALICE", "down", kept.turn)

    report = (await app.command("feedback", user="U0ADMIN"))["text"]
    assert ": 0 / 1" in report  # today: none good, one bad
    assert "<@U0ALICE>" in report and "fake-model" in report and "`calculate`" in report
    assert f"/archives/C0CHAN/p{answer.ts.replace('.', '')}" in report
    refusal = (await app.command("feedback", user="U0ALICE"))["text"]
    assert "admin" in refusal.lower()


async def test_the_channel_in_view_is_context_for_the_model(slack_app: SlackHarness) -> None:
    app = await slack_app.start()
    started = {
        "type": "assistant_thread_started",
        "assistant_thread": {
            "user_id": "U0ALICE",
            "channel_id": "D0ALICE",
            "thread_ts": "704.000001",
            "context": {"channel_id": "C0FIRST", "team_id": TEAM},
        },
    }
    await app.post(app.envelope(started))
    changed = {**started, "type": "assistant_thread_context_changed"}
    changed["assistant_thread"] = {
        **started["assistant_thread"],  # type: ignore[dict-item]
        "context": {"channel_id": "C0SALES", "team_id": TEAM},
    }
    await app.post(app.envelope(changed))
    app.llm.add(text("Sales are fine."))
    question = {
        "type": "message",
        "user": "U0ALICE",
        "text": "how is this channel doing?",
        "ts": "704.000002",
        "thread_ts": "704.000001",
        "channel": "D0ALICE",
        "channel_type": "im",
        "team": TEAM,
    }
    await app.post(app.envelope(question))
    await until(lambda: bool(app.llm.requests), 10)
    system = app.llm.requests[0]["messages"][0]["content"]
    assert "<#C0SALES>" in system and "C0FIRST" not in system
