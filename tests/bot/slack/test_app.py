"""The Slack app end to end: signed requests to /slack/events, the fake Slack Web API, the
fake LLM and a real Redis."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app, send_async_response
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from bot.process.slack import build_slack_side
from bot.slack.blocks import messages as blocks_module
from bot.slack.outbound import answer as answer_module
from tests.fakes.llm_server import calls, error, text
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_harness import (
    SlackHarness,
    channel_message,
    direct_message,
    is_progress,
    mention,
    signed_headers,
)
from tests.waiting import until, until_true

INGRESS_LOG = "bot.slack.inbound.ingress"  # "not answering message <ts> ...: <reason>"
REFUSED_LOG = "bot.slack.inbound.http"  # "refused a request without a valid Slack signature"


def hear_decisions(caplog: pytest.LogCaptureFixture) -> None:
    """Capture the lines where the app decides a request gets no answer (some are DEBUG).

    Called once the app is started: Bolt sets its loggers' levels when the app is built."""
    for name in (INGRESS_LOG, REFUSED_LOG):
        caplog.set_level(logging.DEBUG, logger=name)


def not_answered(caplog: pytest.LogCaptureFixture, ts: str) -> list[str]:
    """The reasons the ingress logged for not answering the message ``ts``: its decision,
    taken before Slack got its ack."""
    start = f"not answering message {ts} "
    return [
        line.split("): ", 1)[1]
        for record in caplog.records
        if record.name == INGRESS_LOG and (line := record.getMessage()).startswith(start)
    ]


def refusals(caplog: pytest.LogCaptureFixture) -> int:
    """How many requests the HTTP layer refused for their signature (401)."""
    return sum(
        record.name == REFUSED_LOG and "without a valid Slack signature" in record.getMessage()
        for record in caplog.records
    )


async def queued(slack_app: SlackHarness) -> int:
    """Turns in the queue's stream: accepted and not finished (a finished turn's entry is
    deleted)."""
    assert slack_app.services is not None
    depth, _ = await slack_app.services.state.threads.queue.depth()
    return depth


async def drained(slack_app: SlackHarness) -> bool:
    """Nothing queued and nothing read and unacknowledged: no turn left for any worker."""
    assert slack_app.services is not None
    return (
        await queued(slack_app) == 0
        and await slack_app.services.state.threads.queue.pending_count() == 0
    )


@pytest.mark.cluster
async def test_a_mention_shows_status_then_answers_in_the_thread(slack_app: SlackHarness) -> None:
    await slack_app.start()
    slack_app.llm.add(text("Flour is in aisle 4."))
    status, ack_s = await slack_app.post(
        slack_app.envelope(mention("where is flour?", "100.000001"))
    )
    assert status == 200 and ack_s < 1.0
    [answer] = await slack_app.answered("C0CHAN", "100.000001")
    assert answer.shown == "Flour is in aisle 4."
    assert answer.thread_ts == "100.000001"
    methods = [c.method for c in slack_app.slack.calls if c.method != "auth.test"]
    assert methods[0] == "agents.sessions.setStatus"  # visible at once
    status_call = slack_app.slack.calls_to("agents.sessions.setStatus")[0]
    assert status_call.args["thread_ts"] == "100.000001"
    assert status_call.args["status"] == "processing"
    assert slack_app.slack.session("C0CHAN", "100.000001") == "active"  # back when answered
    # The model saw the question with its author and without the bot's own mention.
    assert slack_app.llm.requests[0]["messages"][-1]["content"] == "<@U0ALICE>: where is flour?"


@pytest.mark.cluster
async def test_tools_show_as_task_cards_in_the_one_streamed_message(
    slack_app: SlackHarness,
) -> None:
    await slack_app.start()
    slack_app.llm.add(
        calls(("calculate", {"expression": "6*7"}, "c1"), ("get_time", {"timezone": "Mars"}, "c2")),
        text("6*7 is 42."),
    )
    await slack_app.post(slack_app.envelope(mention("compute", "101.000001")))
    [message] = await slack_app.answered("C0CHAN", "101.000001")
    assert slack_app.slack.thread("C0CHAN", "101.000001") == [message]  # one message
    assert message.task_display == "timeline"
    assert (
        message.tasks["c1"]["status"] == "complete" and "calculate" in message.tasks["c1"]["title"]
    )
    assert message.tasks["c2"]["status"] == "error"
    # In a channel a failed card says the error's kind, never its words (they may quote data).
    assert message.tasks["c2"]["output"] == "failed (ToolError)"
    assert "output" not in message.tasks["c1"]  # nor a result
    assert message.text == "6*7 is 42."
    assert not message.open_tasks


async def test_without_any_status_a_working_message_appears(
    slack_app: SlackHarness,
) -> None:
    await slack_app.start()
    slack_app.slack.agent_sessions = False
    slack_app.slack.fail("assistant.threads.setStatus", "not_allowed_token_type", times=5)
    slack_app.llm.add(text("Hello.", delay_s=0.5))
    await slack_app.post(slack_app.envelope(mention("hi", "102.000001")))
    await until(lambda: any(is_progress(m) for m in slack_app.slack.thread("C0CHAN", "102.000001")))
    [answer] = await slack_app.answered("C0CHAN", "102.000001")
    assert answer.shown == "Hello."
    # The bare "Working on it…" message is removed once the answer is there.
    assert not [m for m in slack_app.slack.thread("C0CHAN", "102.000001") if is_progress(m)]


@pytest.mark.cluster
async def test_a_direct_message(slack_app: SlackHarness) -> None:
    await slack_app.start()
    slack_app.llm.add(text("Hi Alice!"))
    await slack_app.post(slack_app.envelope(direct_message("hello", "103.000001")))
    [answer] = await slack_app.answered("D0ALICE", "103.000001")
    assert answer.shown == "Hi Alice!"


@pytest.mark.cluster
async def test_follow_ups_in_a_thread_the_bot_is_in(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start()
    hear_decisions(caplog)
    slack_app.llm.add(text("First answer."), text("Second answer."))
    await slack_app.post(slack_app.envelope(mention("first", "104.000001")))
    await slack_app.answered("C0CHAN", "104.000001")
    follow_up = channel_message("and then?", "104.000002", thread_ts="104.000001")
    await slack_app.post(slack_app.envelope(follow_up))
    answers = await slack_app.answered("C0CHAN", "104.000001", count=2)
    assert [a.shown for a in answers] == ["First answer.", "Second answer."]
    # The follow-up carried the thread's history.
    contents = [m["content"] for m in slack_app.llm.requests[1]["messages"][1:]]
    assert contents == ["<@U0ALICE>: first", "First answer.", "<@U0ALICE>: and then?"]

    # A reply in a thread the bot never joined is not for the bot.
    stranger = channel_message("unrelated", "105.000002", thread_ts="105.000001")
    assert (await slack_app.post(slack_app.envelope(stranger)))[0] == 200
    # The ingress decided: not queued, because the bot has not joined that thread.
    await until(lambda: len(not_answered(caplog, "105.000002")) == 1)
    assert "the bot has not joined that thread" in not_answered(caplog, "105.000002")[0]
    assert await queued(slack_app) == 0
    assert len(slack_app.llm.requests) == 2


async def test_follow_ups_can_be_switched_off(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start(slack={"follow_up_in_threads": False})
    hear_decisions(caplog)
    slack_app.llm.add(text("Only once."))
    await slack_app.post(slack_app.envelope(mention("first", "106.000001")))
    await slack_app.answered("C0CHAN", "106.000001")
    await slack_app.post(
        slack_app.envelope(channel_message("more?", "106.000002", thread_ts="106.000001"))
    )
    # The ingress decided: kept as context for the thread, not queued as a turn.
    await until(lambda: len(not_answered(caplog, "106.000002")) == 1)
    [reason] = not_answered(caplog, "106.000002")
    assert "follow-ups are off" in reason and "kept as context" in reason
    assert await queued(slack_app) == 0
    assert len(slack_app.llm.requests) == 1


@pytest.mark.cluster
async def test_retries_and_duplicates_give_one_answer(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start()
    hear_decisions(caplog)
    slack_app.llm.add(text("Exactly once.", delay_s=0.3))
    event = mention("once please", "107.000001")
    first = slack_app.envelope(event, "EvONCE")
    # Slack retries the same event, and also sends the message event for the same message.
    same_message = slack_app.envelope(channel_message(event["text"], "107.000001"), "EvMESSAGE")
    results = await asyncio.gather(
        slack_app.post(first),
        slack_app.post(first, retry=1),
        slack_app.post(first, retry=2),
        slack_app.post(same_message),
        *[slack_app.post(first) for _ in range(6)],
    )
    assert all(status == 200 for status, _ in results)
    await slack_app.answered("C0CHAN", "107.000001")
    # Every delivery but one was decided at the ingress: 8 duplicates, and the message event
    # left to the app_mention; the one queued turn is finished, so nothing is left to run.
    await until(lambda: len(not_answered(caplog, "107.000001")) == 9)
    reasons = not_answered(caplog, "107.000001")
    assert sum("a duplicate delivery" in reason for reason in reasons) == 8
    assert sum("the app_mention event carries it" in reason for reason in reasons) == 1
    await until_true(lambda: drained(slack_app))
    assert slack_app.idle()
    assert len(slack_app.llm.requests) == 1
    assert [m.shown for m in slack_app.slack.thread("C0CHAN", "107.000001")] == ["Exactly once."]


async def test_forged_or_stale_requests_are_refused(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start()
    hear_decisions(caplog)
    payload = slack_app.envelope(mention("hack", "108.000001"))
    assert (await slack_app.post(payload, secret="wrong-secret"))[0] == 401
    assert (await slack_app.post(payload, signature="v0=deadbeef"))[0] == 401
    stale = int(asyncio.get_running_loop().time())  # nowhere near now
    assert (await slack_app.post(payload, timestamp=stale))[0] == 401
    # Each was refused for its signature before Bolt (and so the ingress) saw it.
    await until(lambda: refusals(caplog) == 3)
    assert not_answered(caplog, "108.000001") == []  # not even classified
    assert slack_app.llm.requests == []
    assert await queued(slack_app) == 0


async def test_own_bot_and_edit_events_are_ignored(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start()
    hear_decisions(caplog)
    own = direct_message("my own words", "109.000001", user="U0BOT")
    own["bot_id"] = "B0BOT"
    other_bot = direct_message("beep", "109.000002", user="U0OTHERBOT")
    other_bot["bot_id"] = "B0OTHER"
    edited = {
        "type": "message",
        "subtype": "message_changed",
        "channel": "D0ALICE",
        "channel_type": "im",
        "ts": "109.000003",
        "hidden": True,
        "message": {"text": "edited", "user": "U0ALICE", "ts": "109.000001"},
    }
    deleted = {
        "type": "message",
        "subtype": "message_deleted",
        "channel": "D0ALICE",
        "channel_type": "im",
        "ts": "109.000004",
        "deleted_ts": "109.000001",
    }
    joined = channel_message("<@U0BOB> has joined", "109.000005", subtype="channel_join")
    for event in (own, other_bot, edited, deleted, joined):
        assert (await slack_app.post(slack_app.envelope(event)))[0] == 200
    # Each one was decided before the ack: the ingress logs why it does not answer each
    # (the bot's own message quietly; message events do not pass Bolt's self-event filter).
    every = ("109.000001", "109.000002", "109.000003", "109.000004", "109.000005")
    await until(lambda: all(len(not_answered(caplog, ts)) == 1 for ts in every))
    assert "own message" in not_answered(caplog, "109.000001")[0]
    assert "another bot's message" in not_answered(caplog, "109.000002")[0]
    assert "message_changed" in not_answered(caplog, "109.000003")[0]
    assert "message_deleted" in not_answered(caplog, "109.000004")[0]
    assert "channel_join" in not_answered(caplog, "109.000005")[0]
    assert await queued(slack_app) == 0
    assert slack_app.llm.requests == []


async def test_other_bots_can_be_answered_when_configured(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"answer_bots": True})
    slack_app.llm.add(text("Hello, fellow bot."))
    other_bot = direct_message("beep", "110.000001", user="U0OTHERBOT")
    other_bot["bot_id"] = "B0OTHER"
    await slack_app.post(slack_app.envelope(other_bot))
    [answer] = await slack_app.answered("D0ALICE", "110.000001")
    assert answer.shown == "Hello, fellow bot."


@pytest.mark.cluster
async def test_a_30000_character_answer_arrives_whole_and_split(slack_app: SlackHarness) -> None:
    await slack_app.start()
    table = "| item | stock |\n|---|---|\n" + "".join(f"| flour {n} | {n} |\n" for n in range(60))
    code = "```python\n" + "".join(f"print('line {n}')\n" for n in range(80)) + "```\n"
    prose = "\n\n".join(
        f"Section {n}. " + "All the details you asked for. " * 30 for n in range(30)
    )
    answer = prose[:9000] + "\n\n" + table + "\n" + code + "\n" + prose[9000:]
    assert len(answer) >= 30_000
    slack_app.llm.add(text(answer, text_piece=500))
    await slack_app.post(slack_app.envelope(mention("everything", "111.000001")))
    messages = await slack_app.answered("C0CHAN", "111.000001", count=3, within=30)
    shown = [m.shown for m in messages]
    assert len(shown) >= 3
    assert all(len(part) <= 12_000 for part in shown)
    assert sum(table.strip() in part for part in shown) == 1
    assert sum(code.strip() in part for part in shown) == 1
    original = [line.rstrip() for line in answer.splitlines() if line.strip()]
    joined = [line.rstrip() for part in shown for line in part.splitlines() if line.strip()]
    assert joined == original


async def test_streaming_with_buffered_appends(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"stream_buffer_chars": 50})
    answer = "Streaming answer. " * 20
    slack_app.llm.add(text(answer, text_piece=10, chunk_delay_s=0.01))
    await slack_app.post(slack_app.envelope(mention("stream it", "112.000001")))
    [message] = await slack_app.answered("C0CHAN", "112.000001")
    assert message.text == answer
    assert len(slack_app.slack.calls_to("chat.startStream")) == 1
    appends = slack_app.slack.calls_to("chat.appendStream")
    assert 1 <= len(appends) < len(answer) // 50 + 2  # buffered, not one call per delta
    assert len(slack_app.slack.calls_to("chat.stopStream")) == 1
    start = slack_app.slack.calls_to("chat.startStream")[0].args
    assert start["recipient_user_id"] == "U0ALICE" and start["thread_ts"] == "112.000001"


async def test_an_expired_stream_falls_back_to_editing(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"stream_buffer_chars": 40})
    slack_app.slack.fail("chat.appendStream", "message_not_in_streaming_state", times=100)
    slack_app.slack.fail("chat.stopStream", "message_not_in_streaming_state", times=100)
    answer = "A long streamed answer that outlives its stream. " * 10
    slack_app.llm.add(text(answer, text_piece=20, delay_s=0))
    await slack_app.post(slack_app.envelope(mention("go", "113.000001")))
    [message] = await slack_app.answered("C0CHAN", "113.000001")
    assert message.shown == answer.rstrip() or message.shown == answer
    assert slack_app.slack.calls_to("chat.update")  # the stream's message was edited


async def test_streaming_unavailable_posts_and_edits(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"stream_buffer_chars": 40})
    slack_app.slack.fail("chat.startStream", "not_allowed", times=100)
    answer = "Posted, then edited as it grows. " * 10
    slack_app.llm.add(text(answer, text_piece=20))
    await slack_app.post(slack_app.envelope(mention("go", "114.000001")))
    [message] = await slack_app.answered("C0CHAN", "114.000001")
    assert message.shown.strip() == answer.strip()
    assert message.blocks[0]["type"] == "markdown"


async def test_without_streaming_a_markdown_block_and_a_fallback_text(
    slack_app: SlackHarness,
) -> None:
    await slack_app.start(slack={"streaming": False})
    slack_app.llm.add(text("**Bold** answer with a [link](https://example.com)."))
    await slack_app.post(slack_app.envelope(mention("plain", "115.000001")))
    [message] = await slack_app.answered("C0CHAN", "115.000001")
    assert message.blocks[0] == {
        "type": "markdown",
        "text": "**Bold** answer with a [link](https://example.com).",
    }
    assert [b["type"] for b in message.blocks] == ["markdown", "context_actions"]  # feedback
    assert message.text == "**Bold** answer with a [link](https://example.com)."
    assert not slack_app.slack.calls_to("chat.startStream")


async def test_a_429_on_chat_update_is_retried_after_retry_after(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"streaming": False})
    slack_app.slack.fail("chat.update", "ratelimited", status=429, retry_after=1)
    slack_app.llm.add(
        calls(("calculate", {"expression": "1+1"}, "c1")),
        calls(("calculate", {"expression": "2+2"}, "c2")),
        text("Done."),
    )
    await slack_app.post(slack_app.envelope(mention("math", "116.000001")))
    await slack_app.answered("C0CHAN", "116.000001", within=20)
    updates = slack_app.slack.calls_to("chat.update")
    assert len(updates) >= 2
    gap = updates[1].at - updates[0].at
    assert gap >= 0.9  # retried after Retry-After, not at once
    [message] = slack_app.slack.thread("C0CHAN", "116.000001")  # tools and answer: one message
    assert "Used 2 tools" in message.blocks[0]["elements"][0]["text"]
    assert message.shown == "Done."


async def test_progress_edits_are_coalesced(slack_app: SlackHarness) -> None:
    await slack_app.start(slack={"streaming": False, "edit_interval_s": 1.0})
    batch = [("calculate", {"expression": f"{n}+1"}, f"c{n}") for n in range(20)]
    slack_app.llm.add(calls(*batch), text("Twenty sums."))
    await slack_app.post(slack_app.envelope(mention("sums", "117.000001")))
    await slack_app.answered("C0CHAN", "117.000001")
    updates = slack_app.slack.calls_to("chat.update")
    assert len(updates) <= 4  # 40 tool events, a handful of edits
    times = [u.at for u in updates]
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(times))


async def test_a_long_answer_read_at_once_is_rendered_once_per_write(
    slack_app: SlackHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message is built (Block Kit, through slack_sdk's models) when an edit goes out,
    not for every piece of text: 2,000 pieces that arrive together are not 2,000 builds."""
    rendered = itertools.count()
    real = blocks_module.turn_blocks

    def counted(*args: Any, **kwargs: Any) -> Any:
        next(rendered)
        return real(*args, **kwargs)

    monkeypatch.setattr(answer_module, "turn_blocks", counted)
    await slack_app.start(slack={"streaming": False, "edit_interval_s": 1.0})
    words = " ".join(f"w{n}" for n in range(1500))
    slack_app.llm.add(text(words, text_piece=4))  # about 2,000 pieces, sent at once
    await slack_app.post(slack_app.envelope(mention("long", "117.000002")))
    [answer] = await slack_app.answered("C0CHAN", "117.000002")
    assert answer.shown.endswith("w1499")
    writes = slack_app.slack.calls_to("chat.postMessage") + slack_app.slack.calls_to("chat.update")
    assert next(rendered) <= len(writes)  # at most one build per write (the last is the end's)


@pytest.mark.cluster
async def test_llm_down_gives_plain_words(slack_app: SlackHarness) -> None:
    await slack_app.start(llm={"base_url": None})
    slack_app.llm.add(error(503), error(503))
    await slack_app.post(slack_app.envelope(mention("hi", "118.000001")))
    [answer] = await slack_app.answered("C0CHAN", "118.000001")
    assert answer.shown == "The model service had an error. Please try again in a minute."
    assert "Traceback" not in answer.shown and "503" not in answer.shown


@pytest.mark.cluster
async def test_the_agent_pane(slack_app: SlackHarness) -> None:
    await slack_app.start(
        slack={
            "suggested_prompts": [{"title": "Stock", "message": "How much flour is left?"}],
            "greeting": "Hi! Ask me about the warehouse.",
        }
    )
    started = {
        "type": "assistant_thread_started",
        "event_ts": "119.000002",
        "assistant_thread": {
            "user_id": "U0ALICE",
            "channel_id": "D0ALICE",
            "thread_ts": "119.000001",
            "context": {},
        },
    }
    assert (await slack_app.post(slack_app.envelope(started)))[0] == 200
    # Slack delivers the start again (a retry): the thread is greeted once.
    assert (await slack_app.post(slack_app.envelope(started), retry=1))[0] == 200
    await slack_app.after_acks()
    [prompts] = slack_app.slack.calls_to("assistant.threads.setSuggestedPrompts")
    assert prompts.args["prompts"] == [{"title": "Stock", "message": "How much flour is left?"}]
    [greeting] = slack_app.slack.thread("D0ALICE", "119.000001")
    assert greeting.shown == "Hi! Ask me about the warehouse."

    slack_app.llm.add(text("12 bags."))
    question = direct_message(
        "How much flour is left in the main warehouse?", "119.000003", thread_ts="119.000001"
    )
    await slack_app.post(slack_app.envelope(question))
    await slack_app.answered("D0ALICE", "119.000001", count=2)
    session = slack_app.slack.calls_to("agents.sessions.setStatus")[0].args
    assert session["title"] == "How much flour is left in the main warehouse?"
    assert session["status"] == "processing" and session["initiator_user_id"] == "U0ALICE"


async def test_redis_down_refuses_the_event_and_the_redelivery_is_answered(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    slack_app.redis_url = private_redis.url
    await slack_app.start()
    slack_app.llm.add(text("Answered after the outage."))
    payload = slack_app.envelope(mention("are you there?", "120.000001"), "EvOUTAGE")

    private_redis.stop()
    status, ack_s = await slack_app.post(payload)
    assert status == 503  # not acknowledged: Slack will deliver it again
    assert ack_s < 3
    private_redis.start()

    status, _ = await slack_app.post(payload, retry=1)
    assert status == 200
    status, _ = await slack_app.post(payload, retry=2)  # a late duplicate changes nothing
    assert status == 200
    [answer] = await slack_app.answered("C0CHAN", "120.000001", within=30)
    assert answer.shown == "Answered after the outage."
    assert len(slack_app.llm.requests) == 1


async def test_socket_mode_acks_through_bolts_dispatch(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    slack_app.redis_url = private_redis.url
    await slack_app.start()
    assert slack_app.services is not None
    socket_side = build_slack_side(slack_app.services, http=False)
    sent: list[SocketModeResponse] = []

    class Socket:
        logger = logging.getLogger("test.socket")

        async def send_socket_mode_response(self, response: SocketModeResponse) -> None:
            sent.append(response)

    async def deliver(envelope_id: str, payload: dict[str, Any]) -> None:
        request = SocketModeRequest(type="events_api", envelope_id=envelope_id, payload=payload)
        response = await run_async_bolt_app(socket_side.app, request)
        await send_async_response(Socket(), request, response, time.time())  # type: ignore[arg-type]

    slack_app.llm.add(text("Over the socket."))
    await deliver("env-1", slack_app.envelope(mention("socket?", "121.000001")))
    assert [r.envelope_id for r in sent] == ["env-1"]
    [answer] = await slack_app.answered("C0CHAN", "121.000001")
    assert answer.shown == "Over the socket."

    private_redis.stop()
    await deliver("env-2", slack_app.envelope(mention("again?", "121.000002")))
    assert [r.envelope_id for r in sent] == ["env-1"]  # no ack: Slack redelivers
    private_redis.start()


@pytest.mark.cluster
async def test_the_slash_command_and_the_home_tab(slack_app: SlackHarness) -> None:
    await slack_app.start()
    reply = await slack_app.command("tools")
    assert reply["response_type"] == "ephemeral"
    assert "`calculate` — Evaluate an arithmetic expression" in reply["text"]
    assert "/agent tools" in (await slack_app.command("help"))["text"]
    assert "Did you mean `/agent tools`?" in (await slack_app.command("tols"))["text"]

    opened = {
        "type": "app_home_opened",
        "user": "U0ALICE",
        "channel": "D0ALICE",
        "tab": "home",
        "event_ts": "122.000001",
    }
    assert (await slack_app.post(slack_app.envelope(opened)))[0] == 200
    await slack_app.after_acks()
    [publish] = slack_app.slack.calls_to("views.publish")
    assert publish.args["user_id"] == "U0ALICE"
    view = publish.args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert "`get_time`" in json.dumps(view)


async def test_the_request_url_challenge(slack_app: SlackHarness) -> None:
    """Slack checks the Request URL once, when it is saved in the app settings."""
    await slack_app.start()
    body = json.dumps({"token": "legacy", "challenge": "abc123", "type": "url_verification"})
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            slack_app.url + "/slack/events", data=body, headers=signed_headers(body)
        ) as response,
    ):
        assert response.status == 200
        assert (await response.json()) == {"challenge": "abc123"}
