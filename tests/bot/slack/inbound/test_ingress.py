"""Which events become turns, and how their text is cleaned (pure, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config.schema import SlackConfig
from bot.slack.inbound.classify import Aside, Identity, Ignored, classify
from bot.slack.text import clean_text
from bot.state.redis.thread_key import ThreadKey
from bot.turn.model import Turn, TurnKind

ME = Identity(team_id="T1", bot_user_id="U0BOT", bot_id="B0BOT")
SETTINGS = SlackConfig()


def event(**fields: Any) -> dict[str, Any]:
    base = {
        "type": "message",
        "user": "U1",
        "text": "hi",
        "ts": "1.1",
        "channel": "C1",
        "channel_type": "channel",
    }
    base.update(fields)
    return base


def test_a_mention_starts_a_thread_on_its_own_message() -> None:
    turn = classify(event(type="app_mention", text="<@U0BOT> hello <@U2>"), "Ev1", ME, SETTINGS)
    assert isinstance(turn, Turn)
    assert (turn.kind, turn.thread_ts, turn.text, turn.event_id) == (
        TurnKind.MENTION,
        "1.1",
        "hello <@U2>",
        "Ev1",
    )
    in_thread = classify(
        event(type="app_mention", text="<@U0BOT> more", thread_ts="0.5"), "Ev2", ME, SETTINGS
    )
    assert isinstance(in_thread, Turn) and in_thread.thread_ts == "0.5"


def test_direct_messages_and_the_agent_pane() -> None:
    dm = classify(event(channel_type="im", channel="D1"), "Ev", ME, SETTINGS)
    pane = classify(event(channel_type="im", channel="D1", thread_ts="0.9"), "Ev", ME, SETTINGS)
    assert isinstance(dm, Turn) and dm.kind is TurnKind.DM and dm.thread_ts == "1.1"
    assert isinstance(pane, Turn) and pane.kind is TurnKind.ASSISTANT and pane.thread_ts == "0.9"


def test_follow_ups_and_plain_channel_talk() -> None:
    follow = classify(event(thread_ts="0.9"), "Ev", ME, SETTINGS)
    assert isinstance(follow, Turn) and follow.kind is TurnKind.FOLLOWUP
    assert isinstance(classify(event(), "Ev", ME, SETTINGS), Ignored)  # not addressed to us
    off = SlackConfig(follow_up_in_threads=False)
    assert isinstance(classify(event(thread_ts="0.9"), "Ev", ME, off), Aside)  # heard only
    # The message event of a mention is left to the app_mention event.
    assert classify(event(text="<@U0BOT> hi", thread_ts="0.9"), "Ev", ME, SETTINGS) == Ignored(
        "a mention: the app_mention event carries it", quiet=True
    )


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (
            {"bot_id": "B0OTHER", "channel_type": "im"},
            "another bot's message (slack.answer_bots is off)",
        ),
        (
            {"subtype": "bot_message", "channel_type": "im"},
            "another bot's message (slack.answer_bots is off)",
        ),
        (
            {"subtype": "message_changed", "channel_type": "im"},
            "subtype message_changed: not a new message",
        ),
        (
            {"subtype": "message_deleted", "channel_type": "im"},
            "subtype message_deleted: not a new message",
        ),
        (
            {"subtype": "channel_join", "thread_ts": "0.1"},
            "subtype channel_join: not a new message",
        ),
        ({"text": "<@U0BOT>", "channel_type": "im"}, "empty message"),
        ({"user": "USLACKBOT", "channel_type": "im"}, "a message from Slackbot"),
        ({"type": "reaction_added"}, "not a message (reaction_added)"),
    ],
)
def test_what_is_ignored_and_logged_at_info(fields: dict[str, Any], reason: str) -> None:
    assert classify(event(**fields), "Ev", ME, SETTINGS) == Ignored(reason)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"user": "U0BOT"}, "own message"),
        ({"bot_id": "B0BOT", "user": "U9"}, "own message"),
        (
            {"subtype": "message_changed", "message": {"bot_id": "B0BOT", "text": "edited"}},
            "subtype message_changed of its own message",
        ),
        (
            {"subtype": "message_deleted", "previous_message": {"user": "U0BOT"}},
            "subtype message_deleted of its own message",
        ),
        ({}, "not addressed to the bot"),
        (
            {"text": "<@U0BOT> hi", "thread_ts": "0.9"},
            "a mention: the app_mention event carries it",
        ),
    ],
)
def test_what_is_ignored_quietly(fields: dict[str, Any], reason: str) -> None:
    """Talk that was never for the bot, and the bot's own messages and edits."""
    assert classify(event(**fields), "Ev", ME, SETTINGS) == Ignored(reason, quiet=True)


def test_thread_replies_with_follow_ups_off_are_only_heard() -> None:
    off = SlackConfig(follow_up_in_threads=False)
    aside = classify(event(thread_ts="0.9"), "Ev", ME, off)
    assert isinstance(aside, Aside)
    assert aside.reason == "a thread reply without a mention (follow-ups are off)"
    assert aside.thread == ThreadKey("T1", "C1", "0.9")


def test_other_bots_when_allowed() -> None:
    allowed = SlackConfig(answer_bots=True)
    turn = classify(event(bot_id="B0OTHER", channel_type="im", user=""), "Ev", ME, allowed)
    assert isinstance(turn, Turn) and turn.user == "B0OTHER"
    # Never itself.
    assert classify(event(bot_id="B0BOT", channel_type="im"), "Ev", ME, allowed) == Ignored(
        "own message", quiet=True
    )


def test_clean_text_keeps_other_mentions_readable() -> None:
    raw = (
        "<@U0BOT|agent> ask <@U2> in <#C9|ops-team> about <https://x.io/a|the doc>, "
        "<https://y.io> &amp; <!here> 1 &lt; 2"
    )
    assert clean_text(raw, "U0BOT") == (
        "ask <@U2> in #ops-team about the doc (https://x.io/a), https://y.io & @here 1 < 2"
    )


def test_slackbot_is_never_answered() -> None:
    """Slackbot's notices come as a person's message (user USLACKBOT, no bot_id)."""
    for fields in ({"channel_type": "im", "channel": "D1"}, {"thread_ts": "0.9"}):
        notice = event(user="USLACKBOT", text="Reminder: standup.", **fields)
        assert classify(notice, "Ev", ME, SETTINGS) == Ignored("a message from Slackbot")


def test_a_shared_channel_thread_is_keyed_by_the_bots_workspace() -> None:
    """Slack Connect: ``event.team`` is the author's workspace; the key must not follow it."""
    home = classify(event(type="app_mention", text="<@U0BOT> hi", team="T1"), "E1", ME, SETTINGS)
    other = classify(
        event(ts="1.2", thread_ts="1.1", team="T9", user_team="T9", user="U9"), "E2", ME, SETTINGS
    )
    assert isinstance(home, Turn) and isinstance(other, Turn)
    assert home.thread_key == other.thread_key == ThreadKey("T1", "C1", "1.1")
    assert other.author_team == "T9"  # roles are resolved for T9


def test_a_forward_without_a_comment_is_answered_with_its_content() -> None:
    share = {
        "is_share": True,
        "is_msg_unfurl": True,
        "text": "The deploy is blocked",
        "author_id": "U7",
        "channel_id": "C7",
    }
    turn = classify(event(channel_type="im", text="", attachments=[share]), "Ev", ME, SETTINGS)
    assert isinstance(turn, Turn) and turn.text == "Forwarded message"  # the session's title
    assert turn.message is not None
    [forward] = turn.message.forwards
    assert forward.text == "The deploy is blocked" and forward.author_id == "U7"
    # A plain link preview is no forward: the empty message stays ignored.
    unfurl = {"title": "Example", "original_url": "https://example.com"}
    assert classify(
        event(channel_type="im", text="", attachments=[unfurl]), "Ev", ME, SETTINGS
    ) == (Ignored("empty message"))


def test_a_bare_mention_is_answered() -> None:
    in_thread = classify(
        event(type="app_mention", text="<@U0BOT>", thread_ts="0.5"), "Ev", ME, SETTINGS
    )
    alone = classify(event(type="app_mention", text="<@U0BOT>"), "Ev", ME, SETTINGS)
    assert isinstance(in_thread, Turn) and in_thread.text == "Look at this thread"
    assert isinstance(alone, Turn) and alone.text == "(mentioned without a message)"


def test_a_reply_to_someone_else_is_heard_not_answered() -> None:
    for text in ("<@U2> can you check?", "<!subteam^S1|@oncall> please look"):
        aside = classify(event(thread_ts="0.9", text=text), "Ev", ME, SETTINGS)
        assert isinstance(aside, Aside) and aside.reason == "a reply addressed to someone else"
        assert aside.message.text == text
    # Addressed to no one: a follow-up, as slack.follow_up_in_threads says.
    assert isinstance(classify(event(thread_ts="0.9", text="thanks"), "Ev", ME, SETTINGS), Turn)
    # Outside a thread, talk to someone else is simply not for the bot.
    assert classify(event(text="<@U2> hi"), "Ev", ME, SETTINGS) == Ignored(
        "not addressed to the bot", quiet=True
    )


def test_another_bots_reply_in_a_channel_thread_is_heard() -> None:
    ci = event(bot_id="B0CI", subtype="bot_message", thread_ts="0.9", user="")
    aside = classify(ci, "Ev", ME, SETTINGS)
    assert isinstance(aside, Aside) and aside.message.user == "B0CI"
    assert aside.reason == "another bot's message (slack.answer_bots is off)"
