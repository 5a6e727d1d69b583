"""Every message the bot acknowledges and does not answer leaves one log line with its reason,
channel, ts and event id (never its text): INFO, except plain talk that was never for the
bot and the bot's own messages, which stay at DEBUG."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.fakes.slack_harness import SlackHarness, channel_message, direct_message, mention

TEXT = "PRIVATE-WORDS-42"


async def not_answered(
    app: SlackHarness, caplog: pytest.LogCaptureFixture, event: dict[str, Any], event_id: str
) -> logging.LogRecord:
    """Post ``event``; return the one 'not answering' line it produced."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="bot.slack.inbound.ingress"):
        status, _ = await app.post(app.envelope(event, event_id))
    assert status == 200
    [record] = [r for r in caplog.records if r.getMessage().startswith("not answering")]
    message = record.getMessage()
    assert event_id in message
    assert f"message {event['ts']} in {event['channel']}" in message
    assert TEXT not in caplog.text
    return record


async def test_a_reply_in_a_thread_the_bot_has_not_joined(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start(with_worker=False)
    reply = channel_message(TEXT, "700.000002", thread_ts="700.000001")
    record = await not_answered(slack_app, caplog, reply, "EvFOLLOW")
    assert record.levelno == logging.INFO
    assert "thread 700.000001" in record.getMessage()
    assert "has not joined" in record.getMessage()
    assert "Redis lost which threads it is in" in record.getMessage()


async def test_a_duplicate_delivery(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    await slack_app.start(with_worker=False)
    event = mention(TEXT, "701.000001")
    assert (await slack_app.post(slack_app.envelope(event, "EvTWICE")))[0] == 200
    record = await not_answered(slack_app, caplog, event, "EvTWICE")
    assert record.levelno == logging.INFO
    assert "duplicate delivery" in record.getMessage()


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (
            direct_message(TEXT, "702.000001", user="U0OTHERBOT") | {"bot_id": "B0OTHER"},
            "another bot's message",
        ),
        (
            {
                "type": "message",
                "subtype": "message_changed",
                "hidden": True,
                "channel": "D0ALICE",
                "channel_type": "im",
                "ts": "702.000002",
                "message": {"text": TEXT, "user": "U0ALICE", "ts": "702.000000"},
            },
            "subtype message_changed",
        ),
        (
            channel_message(f"<@U0BOB> {TEXT}", "702.000003", subtype="channel_join"),
            "subtype channel_join",
        ),
        (direct_message("   ", "702.000004"), "empty message"),
    ],
)
async def test_ignored_messages_are_logged_at_info(
    slack_app: SlackHarness,
    caplog: pytest.LogCaptureFixture,
    event: dict[str, Any],
    reason: str,
) -> None:
    await slack_app.start(with_worker=False)
    record = await not_answered(slack_app, caplog, event, "EvIGNORED")
    assert record.levelno == logging.INFO
    assert reason in record.getMessage()


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (channel_message(TEXT, "703.000001"), "not addressed to the bot"),
        (
            {
                "type": "message",
                "subtype": "message_changed",
                "channel": "C0CHAN",
                "channel_type": "channel",
                "ts": "703.000003",
                "message": {"text": TEXT, "bot_id": "B0BOT", "ts": "703.000002"},
            },
            "subtype message_changed of its own message",  # e.g. its progress message
        ),
    ],
)
async def test_chatter_and_its_own_messages_stay_at_debug(
    slack_app: SlackHarness,
    caplog: pytest.LogCaptureFixture,
    event: dict[str, Any],
    reason: str,
) -> None:
    await slack_app.start(with_worker=False)
    record = await not_answered(slack_app, caplog, event, "EvQUIET")
    assert record.levelno == logging.DEBUG
    assert reason in record.getMessage()
