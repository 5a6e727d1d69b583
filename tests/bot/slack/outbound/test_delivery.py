"""Delivery as part of the turn: Slack refusing posts keeps the turn pending until it takes
them; everything the bot posts is tagged; the text field stays within Slack's limit; no
Stop button is left behind."""

from __future__ import annotations

import json

import pytest

from bot.state.redis.thread_key import ThreadKey
from bot.turn.states import TurnState
from tests.fakes.llm_server import calls, text
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import TEAM
from tests.waiting import until, until_true

POSTING = ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream")


@pytest.mark.parametrize("streaming", [False, True])
async def test_slack_refusing_posts_delays_the_answer_and_never_loses_it(
    slack_app: SlackHarness, streaming: bool
) -> None:
    await slack_app.start(slack={"streaming": streaming})
    slack_app.slack.add_user_message("C0CHAN", "500.000001", "U0ALICE", "question")
    # Whole delivery attempts fail for a while: the turn stays pending and tries again.
    slack_app.slack.outage([*POSTING, "chat.stopStream"], seconds=3.0)
    slack_app.llm.add(text("The answer survived the outage. " * 4))
    status, _ = await slack_app.post(slack_app.envelope(mention("question", "500.000001")))
    assert status == 200
    [answer] = await slack_app.answered("C0CHAN", "500.000001", within=30)
    assert answer.shown.strip() == ("The answer survived the outage. " * 4).strip()
    assert not [m for m in slack_app.slack.thread("C0CHAN", "500.000001") if m.streaming]
    assert slack_app.services is not None
    state = slack_app.services.state
    [stored] = await state.threads.history.load_turns(ThreadKey(TEAM, "C0CHAN", "500.000001"))
    assert (
        stored[-1]["content"].strip() == answer.shown.strip()
    )  # stored as delivered: the model may see it
    assert await state.threads.queue.pending_count() == 0


async def test_everything_the_bot_posts_is_tagged_with_its_turn(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"streaming": False})
    slack_app.llm.add(calls(("calculate", {"expression": "2+2"}, "c1")), text("4"))
    await slack_app.post(slack_app.envelope(mention("2+2?", "501.000001")))
    [answer] = await slack_app.answered("C0CHAN", "501.000001")
    assert slack_app.slack.thread("C0CHAN", "501.000001") == [answer]  # tools and answer
    assert answer.metadata is not None and answer.metadata["event_type"] == "slack_agent"
    payload = answer.metadata["event_payload"]
    assert (payload["message"], payload["kind"], payload["part"]) == ("501.000001", "answer", 0)
    assert payload["turn"]
    assert "stop_turn" not in json.dumps(answer.blocks)  # no Stop left
    assert "Used 1 tool" in answer.blocks[0]["elements"][0]["text"]


async def test_the_stop_buttons_own_message_is_tagged_and_goes(slack_app: SlackHarness) -> None:
    await slack_app.start(tools={"modules": ["tests.fakes.slow_tools"]})
    slack_app.slack.agent_sessions = False
    slack_app.llm.add(calls(("wait_a_while", {"seconds": 0.6}, "w1")), text("waited"))
    await slack_app.post(slack_app.envelope(mention("wait", "505.000001")))
    [answer] = await slack_app.answered("C0CHAN", "505.000001")
    [control] = [
        c
        for c in slack_app.slack.calls_to("chat.postMessage")
        if (c.args.get("metadata") or {}).get("event_payload", {}).get("kind") == "control"
    ]
    assert control.args["metadata"]["event_payload"]["message"] == "505.000001"
    assert slack_app.slack.thread("C0CHAN", "505.000001") == [answer]  # deleted at the end
    assert slack_app.slack.calls_to("chat.delete")


async def test_a_long_answer_keeps_each_text_field_within_slacks_limit(
    slack_app: SlackHarness,
) -> None:
    await slack_app.start(slack={"streaming": False})
    paragraph = "word " * 199 + "end.\n\n"  # 1,002 characters
    slack_app.llm.add(text(paragraph * 15))
    await slack_app.post(slack_app.envelope(mention("long", "502.000001")))
    answers = await slack_app.answered("C0CHAN", "502.000001", count=2)
    assert "".join(m.shown for m in answers).replace("\n", "") == (paragraph * 15).replace("\n", "")
    for call in slack_app.slack.calls_to("chat.postMessage") + slack_app.slack.calls_to(
        "chat.update"
    ):
        assert len(str(call.args.get("text", ""))) <= 4000


async def test_a_channel_slack_refuses_for_good_is_not_retried(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"streaming": False})
    slack_app.slack.fail("chat.postMessage", "channel_not_found", times=50)
    slack_app.llm.add(text("nobody will read this"))
    await slack_app.post(slack_app.envelope(mention("hello?", "503.000001")))
    assert slack_app.services is not None
    state = slack_app.services.state

    async def dead_lettered() -> bool:
        return bool(await state.threads.dead_letters.latest())

    await until_true(dead_lettered)
    [dead] = await state.threads.dead_letters.latest()
    assert dead["reason"] == "undeliverable: channel_not_found"
    assert await state.threads.queue.pending_count() == 0

    # What the turn left open is tidied (nothing was), and nothing more is posted: Slack
    # said the channel is gone.
    async def tidied() -> bool:
        return await state.threads.notices.pending() == 0

    await until_true(tidied)
    await until(lambda: slack_app.idle())
    assert len(slack_app.slack.calls_to("chat.postMessage")) == 1


async def test_a_turn_record_says_what_happened(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"streaming": False})
    slack_app.llm.add(text("recorded"))
    await slack_app.post(slack_app.envelope(mention("record me", "504.000001")))
    await slack_app.answered("C0CHAN", "504.000001")
    assert slack_app.services is not None
    state = slack_app.services.state
    ids = [k async for k in state.client.scan_iter(match=f"{state.keys.prefix}turn:*")]
    [key] = [k for k in ids if k.count(":") == state.keys.prefix.count(":") + 1]
    record = await state.threads.records.read(key.rsplit(":", 1)[-1])
    assert record is not None and record.state is TurnState.DONE
