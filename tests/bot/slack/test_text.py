"""Slack's text codes made readable (pure). Codes as documented at
https://docs.slack.dev/messaging/formatting-message-text."""

from __future__ import annotations

from bot.slack.text import (
    addressed_to_others,
    mentioned_channels,
    mentioned_users,
    readable,
)


def test_people_keep_their_mention_with_the_name_alongside() -> None:
    users = {"U2": "Ana"}
    assert readable("ask <@U2> and <@W3>", users=users) == "ask <@U2> (Ana) and <@W3>"
    # The legacy label is used when no name was looked up.
    assert readable("ping <@U4|bo>") == "ping <@U4> (bo)"
    # The bot's own mention is dropped, labelled or not.
    assert readable("<@U0BOT|agent> hi <@U0BOT>", "U0BOT") == "hi"


def test_channels_read_as_their_name() -> None:
    channels = {"C1": "general"}
    assert readable("see <#C1> and <#C2|ops> and <#C3|>", channels=channels) == (
        "see #general and #ops and <#C3>"
    )


def test_user_groups_and_dates_use_their_fallback() -> None:
    text = (
        "<!subteam^SAZ94GDB8|@oncall> meet <!date^1392734382^{date_short} at {time}|"
        "Feb 18, 2014 at 6:39 AM PST> <!subteam^S1>"
    )
    assert readable(text) == "@oncall meet Feb 18, 2014 at 6:39 AM PST @S1"
    linked = "<!date^1392734382^{date_num}^https://example.com|2014-02-18>"
    assert readable(linked) == "2014-02-18"


def test_special_mentions_links_and_escapes() -> None:
    text = (
        "<!here> <!channel|channel> <!everyone> <https://x.io/a|the doc> <https://y.io> "
        "<mailto:a@b.co|a@b.co> <mailto:c@d.co|write us> 1 &lt; 2 &amp;&gt; <not a code>"
    )
    assert readable(text) == (
        "@here @channel @everyone the doc (https://x.io/a) https://y.io a@b.co "
        "write us (mailto:c@d.co) 1 < 2 &> <not a code>"
    )


def test_who_is_mentioned() -> None:
    text = "<@U1> <@U2|x> <@U1> <#C1|a> <#C2>"
    assert mentioned_users(text) == ["U1", "U2"]
    assert mentioned_channels(text) == ["C1", "C2"]
    assert addressed_to_others("<@U1> look", "U0BOT")
    assert addressed_to_others("<!subteam^S1|@ops> look", "U0BOT")
    assert not addressed_to_others("<@U0BOT> and <@U1>", "U0BOT")  # the bot is asked
    assert not addressed_to_others("<!here> look", "U0BOT")
