"""What schedules ask Slack of a person (bot/slack/profiles.py): their time zone, cached in
Redis (and a lookup that failed not cached, nor taken for a zone); whether they left the
workspace, only ever on a definite ``deleted: true``; whether they may read the schedule's
channel (a DM, a public channel, a private one they are a member of; a lookup that fails
says they may). Against the fake Slack Web API and the real Redis."""

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


def members_pages(slack: FakeSlack) -> list[dict[str, str]]:
    return [dict(call.args) for call in slack.calls_to("conversations.members")]


async def test_in_a_dm_or_a_public_channel_the_owner_may_read_it(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    fake_slack.channels = {"C0PUB": {"id": "C0PUB", "is_private": False}}
    profiles = SlackProfiles(client, state.shared.cache)
    assert await profiles.in_channel("T0TEAM", "U0ALICE", "D0ALICE") is True
    assert fake_slack.calls_to("conversations.info") == []  # a DM is not looked up
    assert await profiles.in_channel("T0TEAM", "U0ALICE", "C0PUB") is True
    again = SlackProfiles(client, state.shared.cache)  # another replica
    assert await again.in_channel("T0TEAM", "U0BOB", "C0PUB") is True
    assert len(fake_slack.calls_to("conversations.info")) == 1  # cached for every replica
    assert members_pages(fake_slack) == []  # anyone in the workspace may read it
    ttl = await state.client.ttl(state.keys.cache("private:channel:C0PUB"))
    assert 3600 - 100 < ttl <= 3600


async def test_in_a_private_channel_only_its_members_may_read_it(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    fake_slack.channels = {"G0PRIV": {"id": "G0PRIV", "is_private": True}}
    fake_slack.members = {"G0PRIV": [f"U{n:07d}" for n in range(2500)] + ["U0ALICE"]}
    profiles = SlackProfiles(client, state.shared.cache)
    assert await profiles.in_channel("T0TEAM", "U0ALICE", "G0PRIV") is True
    pages = members_pages(fake_slack)
    assert [page.get("cursor") for page in pages] == [None, "1000", "2000"]
    assert {page["limit"] for page in pages} == {"1000"}
    assert await profiles.in_channel("T0TEAM", "U0BOB", "G0PRIV") is False
    assert len(members_pages(fake_slack)) == 6
    # Both answers cached briefly, for every replica.
    again = SlackProfiles(client, state.shared.cache)
    assert await again.in_channel("T0TEAM", "U0ALICE", "G0PRIV") is True
    assert await again.in_channel("T0TEAM", "U0BOB", "G0PRIV") is False
    assert len(members_pages(fake_slack)) == 6
    assert len(fake_slack.calls_to("conversations.info")) == 1
    ttl = await state.client.ttl(state.keys.cache("member:G0PRIV:U0BOB"))
    assert 300 - 30 < ttl <= 300


async def test_a_failed_lookup_never_says_the_owner_left_the_channel(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    """Cannot tell: the run goes on, and the next one asks again (nothing cached)."""
    fake_slack.channels = {"G0PRIV": {"id": "G0PRIV", "is_private": True}}
    fake_slack.members = {"G0PRIV": ["U0ALICE"]}
    profiles = SlackProfiles(client, state.shared.cache)
    fake_slack.fail("conversations.info", "internal_error")
    assert await profiles.in_channel("T0TEAM", "U0BOB", "G0PRIV") is True
    fake_slack.fail("conversations.members", "internal_error")
    assert await profiles.in_channel("T0TEAM", "U0BOB", "G0PRIV") is True
    assert await profiles.in_channel("T0TEAM", "U0BOB", "G0PRIV") is False  # asked again
    assert await profiles.in_channel("T0TEAM", "U0BOB", "G0GONE") is True  # channel_not_found


async def test_a_channel_too_large_to_read_whole_cannot_tell(
    fake_slack: FakeSlack, state: State, client: GuardedWebClient
) -> None:
    fake_slack.channels = {"G0BIG": {"id": "G0BIG", "is_private": True}}
    fake_slack.members = {"G0BIG": [f"U{n:07d}" for n in range(6000)]}
    profiles = SlackProfiles(client, state.shared.cache)
    assert await profiles.in_channel("T0TEAM", "U0BOB", "G0BIG") is True
    assert len(members_pages(fake_slack)) == 5  # at most a few pages
    assert await state.client.get(state.keys.cache("member:G0BIG:U0BOB")) is None
