"""A scheduled run's headline (bot/slack/outbound/schedule_headline.py): one top-level line
in the schedule's channel, tagged with the schedule and the run, saying how many earlier
runs were missed; found again by its tag (the bot's own, that schedule's, that run's) in the
channel's recent history. Slack refusing the channel for good is a ``ChannelRefused``; any
other failure is raised as it is. Against the fake Slack Web API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from slack_sdk.errors import SlackApiError

from bot.schedules.firing import ChannelRefused
from bot.schedules.recurrence import Recurrence
from bot.slack.blocks.headline import HEADLINE_PROMPT_CHARS, headline_text
from bot.slack.client import GuardedWebClient, web_client
from bot.slack.errors import CHANNEL_REFUSED, channel_refusal
from bot.slack.identity import BotIdentity
from bot.slack.outbound.schedule_headline import SlackHeadlines
from bot.state.schedules import Schedule
from tests.fakes.slack_server import FakeSlack

NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()


def schedule(
    schedule_id: str = "s1", channel: str = "C0OPS", prompt: str = "Summarise the incidents."
) -> Schedule:
    return Schedule(
        id=schedule_id,
        team="T0TEAM",
        owner="U0ALICE",
        channel=channel,
        prompt=prompt,
        recurrence=Recurrence("0 9 * * *", None, "UTC"),
        state="active",
        reason="",
        created_at=NINE - 86400,
        next_at=NINE,
        last_at=None,
        last_outcome="",
        missed=0,
    )


@pytest.fixture
async def client(fake_slack: FakeSlack) -> AsyncIterator[GuardedWebClient]:
    client = web_client("xoxb-test", fake_slack.api_url)
    yield client
    await client.aclose()


@pytest.fixture
def headlines(client: GuardedWebClient) -> SlackHeadlines:
    return SlackHeadlines(client, BotIdentity(client).me)


async def test_the_headline_is_one_tagged_line_at_the_top_of_the_channel(
    fake_slack: FakeSlack, headlines: SlackHeadlines
) -> None:
    ts = await headlines.post(schedule(), NINE, 0)
    [posted] = fake_slack.top_level("C0OPS")
    assert posted.ts == ts and posted.thread_ts is None
    assert posted.text == ":alarm_clock: Scheduled ask by <@U0ALICE>: Summarise the incidents."
    assert posted.metadata == {
        "event_type": "slack_agent",
        "event_payload": {"kind": "schedule", "schedule": "s1", "occurrence": int(NINE)},
    }
    assert posted.blocks[0]["text"]["text"] == posted.text


async def test_missed_runs_are_counted_in_words() -> None:
    assert headline_text("U1", "Ask.", 1).endswith("Ask. _(1 earlier run was missed)_")
    assert headline_text("U1", "Ask.", 2).endswith("Ask. _(2 earlier runs were missed)_")
    assert "missed" not in headline_text("U1", "Ask.", 0)


async def test_the_prompt_is_one_line_shortened_and_can_mention_nobody() -> None:
    """Shown as text: no broadcast, no mention, nothing a reader cannot see."""
    said = headline_text("U1", "Ping <!channel> and <@U2>\nthen\u202e" + "x" * 300, 0)
    assert "\n" not in said
    assert "<!channel>" not in said and "<@U2>" not in said
    assert "&lt;!channel&gt;" in said and "[U+202E]" in said
    assert said.endswith("…")
    assert said.startswith(":alarm_clock: Scheduled ask by <@U1>: ")


async def test_the_headline_shows_at_most_its_own_prompt_length() -> None:
    """A headline shows 150 characters of the prompt; a schedule's prompt may be 4,000."""
    start = ":alarm_clock: Scheduled ask by <@U1>: "
    fits = "y" * HEADLINE_PROMPT_CHARS
    assert headline_text("U1", fits, 0) == start + fits
    cut = headline_text("U1", fits + "z", 0)
    assert cut == start + "y" * (HEADLINE_PROMPT_CHARS - 1) + "…"
    assert HEADLINE_PROMPT_CHARS == 150


async def test_a_posted_headline_is_found_by_its_tag_and_no_other(
    fake_slack: FakeSlack, headlines: SlackHeadlines
) -> None:
    assert await headlines.find(schedule(), NINE) is None
    other_run = await headlines.post(schedule(), NINE - 86400, 0)
    other_schedule = await headlines.post(schedule("s2"), NINE, 0)
    elsewhere = await headlines.post(schedule(channel="C0ELSE"), NINE, 0)
    # A person's message carrying the same tag is not the bot's.
    fake_slack.add_user_message("C0OPS", fake_slack.new_ts(), "U0MALLORY", "fake")
    forged = next(iter(reversed(fake_slack.user_messages.values())))
    forged.metadata = {
        "event_type": "slack_agent",
        "event_payload": {"kind": "schedule", "schedule": "s1", "occurrence": NINE},
    }
    assert await headlines.find(schedule(), NINE) is None
    ts = await headlines.post(schedule(), NINE, 3)
    assert await headlines.find(schedule(), NINE) == ts
    assert ts not in (other_run, other_schedule, elsewhere)
    [history] = fake_slack.calls_to("conversations.history")[-1:]
    assert history.args["channel"] == "C0OPS"
    assert float(history.args["oldest"]) == NINE - 60  # from shortly before the run
    assert int(history.args["limit"]) == 200  # one page


@pytest.mark.parametrize("error", sorted(CHANNEL_REFUSED))
async def test_slack_refusing_the_channel_for_good_is_a_channel_refusal(
    fake_slack: FakeSlack, headlines: SlackHeadlines, error: str
) -> None:
    """No retry fixes these: the firing pauses the schedule, naming Slack's word."""
    fake_slack.fail("chat.postMessage", error)
    with pytest.raises(ChannelRefused) as posting:
        await headlines.post(schedule(), NINE, 0)
    assert posting.value.reason == error
    fake_slack.fail("conversations.history", error)
    with pytest.raises(ChannelRefused) as finding:
        await headlines.find(schedule(), NINE)
    assert finding.value.reason == error


@pytest.mark.parametrize(
    "error", ["internal_error", "fatal_error", "missing_scope", "invalid_auth", "token_revoked"]
)
async def test_other_failures_are_raised_for_the_firing_to_try_again(
    fake_slack: FakeSlack, headlines: SlackHeadlines, error: str
) -> None:
    """Slack failing for now, or refusing the whole bot (its token, its scopes): no one
    channel's refusal, so no schedule pauses for it."""
    fake_slack.fail("chat.postMessage", error)
    with pytest.raises(SlackApiError, match=error) as posting:
        await headlines.post(schedule(), NINE, 0)
    assert not isinstance(posting.value, ChannelRefused)
    fake_slack.fail("conversations.history", error)
    with pytest.raises(SlackApiError, match=error):
        await headlines.find(schedule(), NINE)


async def test_the_channel_refusals_are_sorted_from_slacks_answers() -> None:
    """Only a Slack answer names a refusal; a dropped connection is worth another try."""
    refused = slack_error({"ok": False, "error": "not_in_channel"})
    assert channel_refusal(refused) == "not_in_channel"
    assert channel_refusal(slack_error({"ok": False, "error": "missing_scope"})) is None
    assert channel_refusal(ConnectionResetError()) is None
    assert {"missing_scope", "invalid_auth", "not_authed"}.isdisjoint(CHANNEL_REFUSED)


def slack_error(answer: dict[str, object]) -> SlackApiError:
    return SlackApiError("refused", answer)  # type: ignore[no-untyped-call]
