"""What schedules ask Slack of a person (bot/slack/profiles.py): their time zone, cached in
Redis (and a lookup that failed not cached, nor taken for a zone); whether they left the
workspace, only ever on a definite ``deleted: true``. Against the fake Slack Web API and the
real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.process.state import State
from bot.slack.client import GuardedWebClient, web_client
from bot.slack.profiles import SlackProfiles
from tests.fakes.slack_server import FakeSlack


def lookups(slack: FakeSlack) -> int:
    return len(slack.calls_to("users.info"))


@pytest.fixture
async def client(fake_slack: FakeSlack) -> AsyncIterator[GuardedWebClient]:
    client = web_client("xoxb-test", fake_slack.api_url)
    yield client
    await client.aclose()


async def test_a_persons_time_zone_is_asked_once_for_every_replica(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    fake_slack.users = {
        "U0ALICE": {"id": "U0ALICE", "tz": "Europe/Berlin"},
        "U0BOB": {"id": "U0BOB"},  # Slack names no zone
        "U0EVE": {"id": "U0EVE", "tz": "Not/A_Zone"},
    }
    profiles = SlackProfiles(client, state.shared.cache)
    assert await profiles.timezone("T0TEAM", "U0ALICE") == "Europe/Berlin"
    assert await profiles.timezone("T0TEAM", "U0BOB") is None
    assert await profiles.timezone("T0TEAM", "U0EVE") is None
    again = SlackProfiles(client, state.shared.cache)  # another replica
    assert await again.timezone("T0TEAM", "U0ALICE") == "Europe/Berlin"
    assert await again.timezone("T0TEAM", "U0BOB") is None
    assert lookups(fake_slack) == 3
    ttl = await state.client.ttl(state.keys.cache("tz:U0ALICE"))
    assert 6 * 3600 - 100 < ttl <= 6 * 3600


async def test_a_failed_lookup_gives_no_zone_and_is_asked_again(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    fake_slack.users = {"U0ALICE": {"id": "U0ALICE", "tz": "Asia/Tokyo"}}
    fake_slack.fail("users.info", "internal_error")
    profiles = SlackProfiles(client, state.shared.cache)
    assert await profiles.timezone("T0TEAM", "U0ALICE") is None
    assert await profiles.timezone("T0TEAM", "U0ALICE") == "Asia/Tokyo"


async def test_only_a_definite_deleted_says_the_person_left(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    fake_slack.users = {
        "U0GONE": {"id": "U0GONE", "deleted": True},
        "U0HERE": {"id": "U0HERE", "deleted": False},
        "U0PLAIN": {"id": "U0PLAIN"},
    }
    profiles = SlackProfiles(client, state.shared.cache)
    assert await profiles.gone("T0TEAM", "U0GONE") is True
    assert await profiles.gone("T0TEAM", "U0HERE") is False
    assert await profiles.gone("T0TEAM", "U0PLAIN") is False
    assert await profiles.gone("T0TEAM", "U0NOBODY") is False  # user_not_found: unknown
    fake_slack.fail("users.info", "internal_error")
    assert await profiles.gone("T0TEAM", "U0GONE") is False  # unknown: the run goes on
    assert await profiles.gone("T0TEAM", "U0GONE") is True  # asked afresh every time
