"""Message events take the short way past Bolt's dispatch to the ingress; every other
request, and a message event before auth.test has answered, goes through Bolt. Either way
Slack gets the same answers."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import pytest
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.slack.inbound.classify import shared_channel
from bot.slack.inbound.message_events import message_event
from bot.turn.model import QueuedTurn
from tests.fakes.slack_harness import (
    SlackHarness,
    channel_message,
    direct_message,
    mention,
    signed_headers,
)


class CountedDispatch:
    """Counts the requests that reach Bolt's dispatch (and passes them on)."""

    def __init__(self, app: SlackHarness) -> None:
        assert app.process is not None
        self.bolt = app.process.slack.app
        self.original = self.bolt.async_dispatch
        self.calls = 0

    async def __call__(self, request: AsyncBoltRequest) -> BoltResponse:
        self.calls += 1
        return await self.original(request)


@pytest.fixture
async def bolt_calls(slack_app: SlackHarness, monkeypatch: pytest.MonkeyPatch) -> CountedDispatch:
    await slack_app.start(with_worker=False)
    counted = CountedDispatch(slack_app)
    monkeypatch.setattr(counted.bolt, "async_dispatch", counted)
    return counted


async def queued(app: SlackHarness) -> int:
    depth, _ = await app.state.threads.queue.depth()
    return depth


def test_which_bodies_are_message_events() -> None:
    body = {"type": "event_callback", "event": {"type": "app_mention", "text": "hi"}}
    assert message_event(body) == {"type": "app_mention", "text": "hi"}
    assert message_event({"type": "event_callback", "event": {"type": "message"}}) is not None
    for other in (
        {"type": "event_callback", "event": {"type": "app_home_opened"}},
        {"type": "event_callback", "event": {"type": "assistant_thread_started"}},
        {"type": "event_callback", "event": "message"},
        {"type": "event_callback"},
        {"type": "url_verification", "challenge": "x"},
        {"type": "block_actions", "event": {"type": "message"}},
        ["event_callback"],
        None,
    ):
        assert message_event(other) is None, other


async def test_a_mention_and_a_message_are_queued_without_bolt(
    slack_app: SlackHarness, bolt_calls: CountedDispatch
) -> None:
    assert (await slack_app.post(slack_app.envelope(mention("hi", "700.000001"))))[0] == 200
    dm = direct_message("hello", "700.000002")
    assert (await slack_app.post(slack_app.envelope(dm)))[0] == 200
    assert await queued(slack_app) == 2
    assert bolt_calls.calls == 0
    # A retry of the same event is a duplicate, answered 200 and not queued again.
    assert (await slack_app.post(slack_app.envelope(dm, "Ev000002"), retry=1))[0] == 200
    assert await queued(slack_app) == 2
    # A slash command is Bolt's.
    await slack_app.command("help")
    assert bolt_calls.calls == 1


async def test_the_bots_own_message_and_talk_not_for_it_are_acked_and_not_queued(
    slack_app: SlackHarness, bolt_calls: CountedDispatch
) -> None:
    own = direct_message("my words", "701.000001", user="U0BOT")
    own["bot_id"] = "B0BOT"
    talk = channel_message("lunch?", "701.000002")
    for event in (own, talk):
        assert (await slack_app.post(slack_app.envelope(event)))[0] == 200
    assert await queued(slack_app) == 0
    assert bolt_calls.calls == 0


async def test_before_auth_test_has_answered_bolt_takes_the_event(
    slack_app: SlackHarness, bolt_calls: CountedDispatch
) -> None:
    assert slack_app.process is not None
    slack_app.process.slack.identity.result = None  # as when auth.test failed at start
    assert (await slack_app.post(slack_app.envelope(mention("hi", "702.000001"))))[0] == 200
    assert bolt_calls.calls == 1
    assert await queued(slack_app) == 1


async def test_an_unexpected_failure_is_a_500_with_its_traceback_logged(
    slack_app: SlackHarness,
    bolt_calls: CountedDispatch,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert slack_app.process is not None

    async def broken(*_: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(slack_app.process.slack.ingress, "receive", broken)
    status, _ = await slack_app.post(slack_app.envelope(mention("hi", "703.000001")))
    assert status == 500  # as Bolt answers a listener's unexpected error: Slack retries
    [record] = [r for r in caplog.records if "handling a Slack request failed" in r.message]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert bolt_calls.calls == 0


async def test_a_body_that_is_not_json_is_still_refused_with_400(
    slack_app: SlackHarness, bolt_calls: CountedDispatch
) -> None:
    body = '{"type": "event_callback", "event": '  # cut short
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            slack_app.url + "/slack/events", data=body, headers=signed_headers(body)
        ) as response,
    ):
        assert response.status == 400
    assert bolt_calls.calls == 0


def test_the_envelopes_shared_flag_is_read_only_when_it_is_a_boolean() -> None:
    assert shared_channel({"is_ext_shared_channel": True}) is True
    assert shared_channel({"is_ext_shared_channel": False}) is False
    for body in ({}, {"is_ext_shared_channel": "true"}, None, ["x"]):
        assert shared_channel(body) is None


async def test_the_envelopes_shared_flag_is_carried_on_the_turn_either_way_in(
    slack_app: SlackHarness, bolt_calls: CountedDispatch
) -> None:
    assert slack_app.process is not None
    shared = slack_app.envelope(mention("hi", "703.000001", channel="C0SHARED"))
    shared["is_ext_shared_channel"] = True
    assert (await slack_app.post(shared))[0] == 200
    plain = slack_app.envelope(mention("hi", "703.000002", channel="C0PLAIN"))
    plain["is_ext_shared_channel"] = False
    assert (await slack_app.post(plain))[0] == 200
    slack_app.process.slack.identity.result = None  # Bolt's way in
    unsaid = slack_app.envelope(mention("hi", "703.000003", channel="C0UNSAID"))
    assert (await slack_app.post(unsaid))[0] == 200
    bolted = slack_app.envelope(mention("hi", "703.000004", channel="C0BOLTED"))
    bolted["is_ext_shared_channel"] = True
    assert (await slack_app.post(bolted))[0] == 200
    assert bolt_calls.calls == 2
    queue = slack_app.state.threads.queue
    await queue.ensure_group()
    entries = await queue.read("test", 10, 0)
    said = {e.turn.channel: e.turn.shared for e in entries if isinstance(e, QueuedTurn)}
    assert said == {"C0SHARED": True, "C0PLAIN": False, "C0UNSAID": None, "C0BOLTED": True}
