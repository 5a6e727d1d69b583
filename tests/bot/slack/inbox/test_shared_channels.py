"""Whether a channel is shared with another organisation (bot/slack/inbox/shared_channels.py):
the event's flag first, else conversations.info cached for an hour; a failed lookup counts as
shared and is not cached. Against the fake Slack Web API and the real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.process.state import State
from bot.slack.client import GuardedWebClient, web_client
from bot.slack.inbox.shared_channels import SharedChannels
from tests.fakes.slack_server import FakeSlack


def lookups(slack: FakeSlack) -> int:
    return sum(1 for call in slack.calls if call.method == "conversations.info")


@pytest.fixture
async def client(fake_slack: FakeSlack) -> AsyncIterator[GuardedWebClient]:
    client = web_client("xoxb-test", fake_slack.api_url)
    yield client
    await client.aclose()


async def test_the_events_flag_wins_and_asks_nobody(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    channels = SharedChannels(client, state.shared.cache)
    fake_slack.channels["C0CONNECT"] = {"id": "C0CONNECT", "is_ext_shared": True}
    assert await channels.external("C0CONNECT", False) is False
    assert await channels.external("C0PLAIN", True) is True
    assert await channels.external("D0ANA", None) is False  # a DM is not looked up
    assert lookups(fake_slack) == 0


async def test_without_the_flag_slack_is_asked_once_an_hour(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    channels = SharedChannels(client, state.shared.cache)
    fake_slack.channels["C0CONNECT"] = {"id": "C0CONNECT", "is_ext_shared": True}
    fake_slack.channels["C0PLAIN"] = {"id": "C0PLAIN", "is_ext_shared": False}
    assert await channels.external("C0CONNECT", None) is True
    assert await channels.external("C0PLAIN", None) is False
    assert lookups(fake_slack) == 2
    # Another replica's reader finds both in Redis.
    again = SharedChannels(client, state.shared.cache)
    assert await again.external("C0CONNECT", None) is True
    assert await again.external("C0PLAIN", None) is False
    assert lookups(fake_slack) == 2
    ttl = await state.client.ttl(state.keys.cache("shared:channel:C0CONNECT"))
    assert 3500 < ttl <= 3600


async def test_a_failed_lookup_counts_as_shared_and_is_asked_again(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    channels = SharedChannels(client, state.shared.cache)
    fake_slack.channels["C0PLAIN"] = {"id": "C0PLAIN", "is_ext_shared": False}
    fake_slack.fail("conversations.info", "missing_scope")
    assert await channels.external("C0PLAIN", None) is True  # fail closed
    assert await channels.external("C0GONE", None) is True  # channel_not_found
    assert await channels.external("C0PLAIN", None) is False  # not cached: asked again
