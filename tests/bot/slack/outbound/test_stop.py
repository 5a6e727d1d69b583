"""Stopping a turn: the Stop button where the workspace has no agent sessions (on the
turn's message, or on its own message while the answer streams), and Slack's own stop of
an agent session or of a stream. It cancels the running tools and ends the turn; nothing is
written into a stream the person stopped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.state.redis.thread_key import ThreadKey
from tests.fakes import slow_tools
from tests.fakes.llm_server import calls, text
from tests.fakes.slack_harness import SlackHarness, button_click, mention
from tests.fakes.slack_server import Message
from tests.waiting import until

pytestmark = pytest.mark.cluster  # each test on a single Redis and on a Redis Cluster

CONFIG: dict[str, Any] = {
    "tools": {"modules": ["tests.fakes.slow_tools"]},
    "slack": {"streaming": False, "edit_interval_s": 0.2},
    "roles": {
        "admin": {"admin": True, "members": ["U0ADMIN"], "tools": ["*"]},
        "member": {"default": True, "tools": ["*"]},
    },
}


def stop_button(message: Message) -> dict[str, Any] | None:
    for block in message.blocks:
        for element in block.get("elements", []):
            if element.get("action_id") == "stop_turn":
                return dict(element)
    return None


async def running_progress(app: SlackHarness, thread: str) -> Message:
    def find() -> Message | None:
        for message in app.slack.thread("C0CHAN", thread):
            if stop_button(message) and "running" in json.dumps(message.blocks):
                return message
        return None

    await until(lambda: find() is not None, 15)
    found = find()
    assert found is not None
    return found


async def test_the_asker_stops_a_long_tool(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG)
    app.slack.agent_sessions = False  # the Stop button is ours only without agent sessions
    slow_tools.CANCELLED.clear()
    app.llm.add(calls(("wait_a_while", {"seconds": 30}, "w1")), text("never asked"))
    await app.post(app.envelope(mention("take your time", "400.000001", user="U0ALICE")))
    progress = await running_progress(app, "400.000001")
    button = stop_button(progress)
    assert button is not None and json.loads(button["value"])["user"] == "U0ALICE"

    assert await app.click("stop_turn", button["value"], "U0ALICE", progress.ts) == 200
    answers = await app.answered("C0CHAN", "400.000001", within=10)
    assert [a.shown for a in answers] == ["Stopped before the answer was finished."]
    assert slow_tools.CANCELLED == [30]  # the running tool was cancelled
    assert len(app.llm.requests) == 1  # no further model call
    [final] = app.slack.thread("C0CHAN", "400.000001")  # one message: the tools, the answer
    assert "`wait_a_while` stopped" in final.blocks[0]["elements"][0]["text"]
    assert stop_button(final) is None  # the button goes once the turn is over
    # The turn is stored whole: the call has its (cancelled) result.
    assert app.services is not None
    [stored] = await app.services.state.threads.history.load_turns(
        ThreadKey("T0TEAM", "C0CHAN", "400.000001")
    )
    assert [m["role"] for m in stored] == ["user", "assistant", "tool"]


async def test_only_the_asker_or_an_admin_may_stop(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG)
    app.slack.agent_sessions = False  # the Stop button is ours only without agent sessions
    app.llm.add(calls(("wait_a_while", {"seconds": 1.5}, "w1")), text("Done waiting."))
    await app.post(app.envelope(mention("wait", "401.000001", user="U0ALICE")))
    progress = await running_progress(app, "401.000001")
    button = stop_button(progress)
    assert button is not None
    assert await app.click("stop_turn", button["value"], "U0BOB", progress.ts) == 200
    await app.after_acks()
    [refusal] = app.slack.calls_to("response_url")
    assert refusal.args["text"] == "Only the person who asked, or an admin, can stop this answer."
    assert refusal.args["response_type"] == "ephemeral"
    answers = await app.answered("C0CHAN", "401.000001", within=10)
    assert [a.shown for a in answers] == ["Done waiting."]


async def test_an_owner_of_another_workspace_may_not_stop_others(slack_app: SlackHarness) -> None:
    """Slack Connect: the click names the clicker's own workspace (user.team_id); being an
    owner there makes no one an admin here."""
    roles = {**CONFIG["roles"], "admin": {"admin": True, "workspace_admins": True, "tools": ["*"]}}
    app = await slack_app.start(**{**CONFIG, "roles": roles})
    app.slack.agent_sessions = False  # the Stop button is ours only without agent sessions
    app.slack.users["U0PARTNER"] = {"id": "U0PARTNER", "team_id": "T0OTHER", "is_owner": True}
    app.llm.add(calls(("wait_a_while", {"seconds": 1.5}, "w1")), text("Done waiting."))
    await app.post(app.envelope(mention("wait", "403.000001", user="U0ALICE")))
    progress = await running_progress(app, "403.000001")
    button = stop_button(progress)
    assert button is not None
    click = button_click(
        "stop_turn", button["value"], "U0PARTNER", progress.ts, app.slack.response_url
    )
    click["user"]["team_id"] = "T0OTHER"
    assert await app.click_payload(click) == 200
    await app.after_acks()
    [refusal] = app.slack.calls_to("response_url")
    assert refusal.args["text"] == "Only the person who asked, or an admin, can stop this answer."
    answers = await app.answered("C0CHAN", "403.000001", within=10)
    assert [a.shown for a in answers] == ["Done waiting."]


async def test_an_admin_may_stop_anyones_turn(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG)
    app.slack.agent_sessions = False  # the Stop button is ours only without agent sessions
    app.llm.add(calls(("wait_a_while", {"seconds": 30}, "w1")), text("never"))
    await app.post(app.envelope(mention("wait", "402.000001", user="U0ALICE")))
    progress = await running_progress(app, "402.000001")
    button = stop_button(progress)
    assert button is not None
    await app.click("stop_turn", button["value"], "U0ADMIN", progress.ts)
    answers = await app.answered("C0CHAN", "402.000001", within=10)
    assert [a.shown for a in answers] == ["Stopped before the answer was finished."]


async def test_a_stop_for_an_earlier_turn_does_not_stop_the_next(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**CONFIG)
    app.slack.agent_sessions = False  # the Stop button is ours only without agent sessions
    app.llm.add(calls(("wait_a_while", {"seconds": 30}, "w1")))  # stopped: no second call
    await app.post(app.envelope(mention("wait", "403.000001", user="U0ALICE")))
    progress = await running_progress(app, "403.000001")
    button = stop_button(progress)
    assert button is not None
    await app.click("stop_turn", button["value"], "U0ALICE", progress.ts)
    await app.answered("C0CHAN", "403.000001", within=10)
    # The next question in the same thread runs to its answer (a tool round included).
    app.llm.add(calls(("wait_a_while", {"seconds": 0.8}, "w2")), text("Finished this time."))
    follow_up = mention("again", "403.000002", user="U0ALICE", thread_ts="403.000001")
    await app.post(app.envelope(follow_up))
    answers = await app.answered("C0CHAN", "403.000001", count=2, within=15)
    assert answers[-1].shown == "Finished this time."


STREAMING: dict[str, Any] = {**CONFIG, "slack": {"streaming": True, "edit_interval_s": 0.2}}


async def streamed_message(app: SlackHarness, thread: str) -> Message:
    def find() -> Message | None:
        return next((m for m in app.slack.thread("C0CHAN", thread) if m.streaming), None)

    await until(lambda: find() is not None, 15)
    found = find()
    assert found is not None
    return found


async def test_while_streaming_without_sessions_the_button_has_its_own_message(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(**STREAMING)
    app.slack.agent_sessions = False
    slow_tools.CANCELLED.clear()
    app.llm.add(calls(("wait_a_while", {"seconds": 30}, "w1")), text("never"))
    await app.post(app.envelope(mention("wait", "404.000001", user="U0ALICE")))
    control = await running_progress_or_control(app, "404.000001")
    button = stop_button(control)
    assert button is not None
    await app.click("stop_turn", button["value"], "U0ALICE", control.ts)
    [answer] = await app.answered("C0CHAN", "404.000001", within=10)
    assert answer.text.endswith("_Stopped before the answer was finished._")
    assert answer.tasks["w1"]["status"] == "error" and not answer.open_tasks
    assert app.slack.thread("C0CHAN", "404.000001") == [answer]  # the button's message is gone
    assert slow_tools.CANCELLED == [30]


async def running_progress_or_control(app: SlackHarness, thread: str) -> Message:
    def find() -> Message | None:
        return next((m for m in app.slack.thread("C0CHAN", thread) if stop_button(m)), None)

    await until(lambda: find() is not None, 15)
    found = find()
    assert found is not None
    return found


async def test_slacks_own_stop_cancels_the_turn_and_leaves_the_stream_alone(
    slack_app: SlackHarness,
) -> None:
    app = await slack_app.start(**STREAMING)
    slow_tools.CANCELLED.clear()
    app.llm.add(calls(("wait_a_while", {"seconds": 30}, "w1")), text("never"))
    await app.post(app.envelope(mention("wait", "405.000001", user="U0ALICE")))
    stream = await streamed_message(app, "405.000001")
    assert not any(stop_button(m) for m in app.slack.thread("C0CHAN", "405.000001"))
    # The person presses Slack's stop: Slack stops the stream and tells the bot.
    app.slack.stop_stream_as_user("C0CHAN", stream.ts)
    stopped_at = len(app.slack.calls)
    event = {
        "type": "agent_session_stopped",
        "channel": "C0CHAN",
        "thread_ts": "405.000001",
        "user": "U0ALICE",
        "streaming_message_ts": [stream.ts],
        "event_ts": "405.000009",
    }
    assert (await app.post(app.envelope(event)))[0] == 200
    await until(lambda: slow_tools.CANCELLED == [30], 5)  # stopped on the replica running it
    await until(lambda: app.slack.session("C0CHAN", "405.000001") == "active", 10)
    await until(lambda: app.idle(), 10)
    after = [c for c in app.slack.calls[stopped_at:] if c.args.get("ts") == stream.ts]
    assert after == []  # nothing appended to, stopped or edited in the stopped message
    assert len(app.llm.requests) == 1


async def test_a_stream_the_person_stopped_stops_the_turn(slack_app: SlackHarness) -> None:
    app = await slack_app.start(**STREAMING)
    app.slack.user_stop_error = "stopped_by_user"
    slow_tools.CANCELLED.clear()
    app.llm.add(
        calls(("wait_a_while", {"seconds": 0.5}, "w1")),
        calls(("wait_a_while", {"seconds": 30}, "w2")),
        text("never"),
    )
    await app.post(app.envelope(mention("wait", "406.000001", user="U0ALICE")))
    stream = await streamed_message(app, "406.000001")
    app.slack.stop_stream_as_user("C0CHAN", stream.ts)  # no event reaches the bot
    # The next write to the stream hears "stopped_by_user": the turn stops.
    await until(lambda: slow_tools.CANCELLED == [30], 10)
    await until(lambda: app.idle(), 10)
    refused = [c for c in app.slack.calls if c.args.get("ts") == stream.ts]
    assert all(c.method in ("chat.appendStream", "chat.stopStream") for c in refused)
    assert not app.slack.calls_to("chat.update")  # never edited into the stopped message
