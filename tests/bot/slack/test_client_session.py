"""The Web API client's one aiohttp session: calls share its connections, retries still
apply, and once it is closed a call still goes out on a session of its own."""

from __future__ import annotations

import asyncio

from bot.slack.client import web_client
from tests.fakes.slack_server import FakeSlack


async def test_calls_one_after_another_share_one_connection(fake_slack: FakeSlack) -> None:
    client = web_client("xoxb-test", fake_slack.api_url)
    try:
        for n in range(5):
            await client.chat_postMessage(channel="C1", text=f"message {n}")
        session = client.session
        await client.auth_test()
        assert client.session is session and session is not None
        assert len({call.peer for call in fake_slack.calls}) == 1
    finally:
        await client.aclose()
    assert session.closed and client.session is None


async def test_calls_at_once_each_get_a_connection_and_keep_them(fake_slack: FakeSlack) -> None:
    client = web_client("xoxb-test", fake_slack.api_url)
    fake_slack.latency_s = 0.05
    try:
        await asyncio.gather(*(client.auth_test() for _ in range(20)))
        first = {call.peer for call in fake_slack.calls}
        fake_slack.calls.clear()
        await asyncio.gather(*(client.auth_test() for _ in range(20)))
        assert {call.peer for call in fake_slack.calls} == first  # kept, reused
    finally:
        await client.aclose()


async def test_a_rate_limited_call_is_still_retried(fake_slack: FakeSlack) -> None:
    client = web_client("xoxb-test", fake_slack.api_url)
    fake_slack.fail("auth.test", "ratelimited", status=429, retry_after=0)
    try:
        response = await client.auth_test()
    finally:
        await client.aclose()
    assert response["ok"] is True
    assert [call.status for call in fake_slack.calls_to("auth.test")] == [429, 200]


async def test_after_closing_a_call_opens_a_session_of_its_own(fake_slack: FakeSlack) -> None:
    client = web_client("xoxb-test", fake_slack.api_url)
    await client.auth_test()
    await client.aclose()
    assert (await client.auth_test())["ok"] is True
    assert client.session is None
