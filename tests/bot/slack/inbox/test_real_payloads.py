"""Real Slack payloads replayed against the running app: what the model receives.

Each payload keeps the shape of its source (recorded with it); only ids are moved into the
test workspace (team T0TEAM, bot U0BOT, channel C0CHAN) and timestamps made unique. The app
is the real one (signed HTTP requests to /slack/events), against the fake Slack Web API, the
fake LLM and the real Redis.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.fakes.llm_server import text
from tests.fakes.slack_harness import SlackHarness, direct_message, mention
from tests.fakes.slack_server import BOT_USER, TEAM

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def rich_text(*elements: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "type": "rich_text",
            "block_id": "qTg",
            "elements": [{"type": "rich_text_section", "elements": list(elements)}],
        }
    ]


def user_message_to_model(app: SlackHarness, request: int = -1) -> Any:
    messages = app.llm.requests[request]["messages"]
    return [m for m in messages if m["role"] == "user"][-1]["content"]


async def started(app: SlackHarness, **config: Any) -> SlackHarness:
    await app.start(**config)
    users = {
        "U061F7AUR": "River",
        "U024BE7LH": "Kai",
        "U0DANA": "Dana",
        "U043H11ES4V": "Jade",
        "U123ABC456": "Sam",
        "U0ALICE": "Alice",
        "U0EXT": "Erin",
    }
    for user, name in users.items():
        app.slack.users[user] = {"id": user, "profile": {"display_name": name}}
    app.slack.channels["C024BE7LR"] = {"id": "C024BE7LR", "name": "release"}
    app.slack.channels["C0OPS"] = {"id": "C0OPS", "name": "ops"}
    return app


async def test_app_mention_with_rich_text(slack_app: SlackHarness) -> None:
    # Source: docs.slack.dev/reference/events/app_mention, the example event (with the rich
    # text blocks Slack adds to every message written in its editor).
    app = await started(slack_app)
    app.llm.add(text("Every bit."))
    event = {
        "type": "app_mention",
        "user": "U061F7AUR",
        "text": f"<@{BOT_USER}> is it everything a river should be?",
        "ts": "1515449522.000016",
        "channel": "C0CHAN",
        "event_ts": "1515449522.000016",
        "blocks": rich_text(
            {"type": "user", "user_id": BOT_USER},
            {"type": "text", "text": " is it everything a river should be?"},
        ),
    }
    await app.post(app.envelope(event))
    await app.answered("C0CHAN", "1515449522.000016")
    assert user_message_to_model(app) == (
        "<@U061F7AUR> (River): is it everything a river should be?"
    )


async def test_user_group_date_channel_and_user_codes(slack_app: SlackHarness) -> None:
    # Source: docs.slack.dev/messaging/formatting-message-text (user groups
    # "<!subteam^ID|@handle>", dates "<!date^epoch^tokens|fallback>", channels "<#ID>",
    # users "<@ID>"), as a message.im event (docs.slack.dev/reference/events/message.im).
    app = await started(slack_app)
    app.llm.add(text("Noted."))
    event = direct_message(
        "Hey <!subteam^SAZ94GDB8|@engineering>, the release is "
        "<!date^1392734382^{date_pretty} at {time}|February 18th, 2014 at 6:39 AM PST> in "
        "<#C024BE7LR> — ask <@U024BE7LH> &amp; <#C0OPS|>",
        "1392734382.000100",
    )
    event["blocks"] = rich_text(
        {"type": "usergroup", "usergroup_id": "SAZ94GDB8"},
        {"type": "date", "timestamp": 1392734382, "format": "{date_pretty} at {time}"},
    )
    await app.post(app.envelope(event))
    await app.answered("D0ALICE", "1392734382.000100")
    assert user_message_to_model(app) == (
        "Hey @engineering, the release is February 18th, 2014 at 6:39 AM PST in #release — "
        "ask <@U024BE7LH> (Kai) & #ops"
    )


async def test_a_text_file_shared_in_a_dm(slack_app: SlackHarness) -> None:
    # Source: a captured message.im file_share webhook (slack-web, tests/golden/
    # SlackWebhookEvent/message_file_share.json); the file object's fields as documented at
    # docs.slack.dev/reference/objects/file-object.
    app = await started(slack_app)
    app.llm.add(text("It says to hug a kitten."))
    file = app.slack.add_file(
        "F04EEHX1EES",
        "namenamename.txt",
        b"hug a kitten",
        "text/plain",
        filetype="text",
        pretty_type="Plain Text",
        mode="snippet",
        user="U043H11ES4V",
        user_team=TEAM,
        preview="hug a kitten",
        is_external=False,
    )
    event = direct_message("message message message", "1670631527.874149", user="U043H11ES4V")
    event.update(subtype="file_share", files=[file], upload=True, display_as_bot=False)
    await app.post(app.envelope(event))
    await app.answered("D0ALICE", "1670631527.874149")
    assert user_message_to_model(app) == (
        "message message message\n"
        "[file: namenamename.txt — Plain Text, 12 bytes; its text is below]\n\n"
        '<file name="namenamename.txt">\nhug a kitten\n</file>'
    )
    [download] = app.slack.calls_to("file_download")
    assert download.status == 200  # with the bot token


async def test_a_slack_connect_file_known_only_by_id(slack_app: SlackHarness) -> None:
    # Source: a captured Slack Connect file_share webhook (slack-web, tests/golden/
    # SlackWebhookEvent/message_file_share_slack_connect.json): the file is only
    # {"id", "mode": "file_access", "file_access": "check_file_info"}; files.info tells more.
    app = await started(slack_app)
    app.llm.add(text("Two columns."))
    app.slack.add_file("F12345678", "data.csv", b"a,b\n1,2\n", "text/csv", pretty_type="CSV")
    event = direct_message("message message message", "1670631527.874150", user="U043H11ES4V")
    event.update(
        subtype="file_share",
        files=[
            {
                "id": "F12345678",
                "mode": "file_access",
                "file_access": "check_file_info",
                "created": 0,
                "timestamp": 0,
                "user": "",
            }
        ],
    )
    await app.post(app.envelope(event))
    await app.answered("D0ALICE", "1670631527.874150")
    given = user_message_to_model(app)
    assert given.startswith("message message message\n[file: data.csv — CSV, 8 bytes;")
    assert '<file name="data.csv">\na,b\n1,2\n\n</file>' in given


async def test_a_picture_for_a_vision_model(slack_app: SlackHarness) -> None:
    # Source: the file object (docs.slack.dev/reference/objects/file-object): an image has
    # thumbnails (thumb_64 ... thumb_1024) behind the same bot-token authorization.
    app = await started(slack_app, llm={"vision": True})
    app.llm.add(text("A one-pixel image."))
    file = app.slack.add_file("F0PIC", "pixel.png", PNG, "image/png", pretty_type="PNG")
    event = direct_message("what is this?", "1700000100.000100")
    event.update(subtype="file_share", files=[file])
    await app.post(app.envelope(event))
    await app.answered("D0ALICE", "1700000100.000100")
    messages = app.llm.requests[0]["messages"]
    pictures, question = messages[-2], messages[-1]
    assert question["content"] == "what is this?\n[file: pixel.png — PNG, 67 bytes; shown to you]"
    assert pictures["content"][1]["type"] == "image_url"
    assert pictures["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    # The picture is not kept: the history holds the question only.
    app.llm.add(text("Still a pixel."))
    follow_up = direct_message("and now?", "1700000100.000200", thread_ts="1700000100.000100")
    await app.post(app.envelope(follow_up))
    await app.answered("D0ALICE", "1700000100.000100", count=2)
    later = app.llm.requests[1]["messages"]
    assert [m["role"] for m in later[1:]] == ["user", "assistant", "user"]
    assert later[1] == question


FORWARD = {
    # Source: the attachment Slack adds when a message is forwarded ("Forward message"),
    # as captured in webhooks: is_share + is_msg_unfurl, the original's author, channel and
    # link, its text (and its blocks in message_blocks).
    "ts": "1700000000.000100",
    "channel_id": "C0OPS",
    "channel_team": TEAM,
    "is_msg_unfurl": True,
    "is_share": True,
    "message_blocks": [
        {
            "team": TEAM,
            "channel": "C0OPS",
            "ts": "1700000000.000100",
            "message": {
                "blocks": rich_text(
                    {"type": "text", "text": "The deploy is blocked on the DB migration"}
                )
            },
        }
    ],
    "id": 1,
    "original_url": "https://test.slack.com/archives/C0OPS/p1700000000000100",
    "fallback": "[November 14th, 2023 10:13 PM] dana: The deploy is blocked on the DB migration",
    "text": "The deploy is blocked on the DB migration",
    "author_id": "U0DANA",
    "author_name": "dana",
    "author_subname": "Dana",
    "author_link": "https://test.slack.com/team/U0DANA",
    "mrkdwn_in": ["text"],
    "footer": "Posted in #ops",
    "from_url": "https://test.slack.com/archives/C0OPS/p1700000000000100",
}


async def test_a_forward_without_a_comment(slack_app: SlackHarness) -> None:
    app = await started(slack_app)
    app.llm.add(text("Run the migration first."))
    event = direct_message("", "1700000200.000100")
    event["attachments"] = [FORWARD]
    await app.post(app.envelope(event))
    await app.answered("D0ALICE", "1700000200.000100")
    assert user_message_to_model(app) == (
        "Forwarded message from <@U0DANA> (Dana) in #ops:\n"
        "> The deploy is blocked on the DB migration"
    )


async def test_a_forward_with_a_comment_in_a_mention(slack_app: SlackHarness) -> None:
    app = await started(slack_app)
    app.llm.add(text("Looking."))
    event = mention("can you look at this?", "1700000300.000100")
    event["attachments"] = [FORWARD]
    await app.post(app.envelope(event))
    await app.answered("C0CHAN", "1700000300.000100")
    assert user_message_to_model(app) == (
        "<@U0ALICE> (Alice): can you look at this?\n"
        "Forwarded message from <@U0DANA> (Dana) in #ops:\n"
        "> The deploy is blocked on the DB migration"
    )


async def test_a_slack_connect_mention_then_a_home_reply(slack_app: SlackHarness) -> None:
    # Source: the Events API envelope in a shared channel (docs.slack.dev/apis/slack-connect:
    # team_id / authorizations name the app's workspace, event.team, user_team and
    # source_team the author's; is_ext_shared_channel is true).
    app = await started(slack_app)
    app.llm.add(text("Hi Erin."), text("Hi Alice."))
    event = mention("hello from the partner side", "1700000400.000100", user="U0EXT")
    event.update(team="T0OTHER", user_team="T0OTHER", source_team="T0OTHER")
    envelope = app.envelope(event)
    envelope["is_ext_shared_channel"] = True
    await app.post(envelope)
    await app.answered("C0CHAN", "1700000400.000100")
    reply = {
        "type": "message",
        "user": "U0ALICE",
        "text": "and from ours",
        "ts": "1700000400.000200",
        "thread_ts": "1700000400.000100",
        "channel": "C0CHAN",
        "channel_type": "channel",
        "team": TEAM,
        "user_team": TEAM,
        "source_team": TEAM,
    }
    envelope = app.envelope(reply)
    envelope["is_ext_shared_channel"] = True
    await app.post(envelope)
    await app.answered("C0CHAN", "1700000400.000100", count=2)
    assert user_message_to_model(app, 0) == "<@U0EXT> (Erin): hello from the partner side"
    assert user_message_to_model(app, 1) == "<@U0ALICE> (Alice): and from ours"
    assert len(app.llm.requests[1]["messages"]) == 4  # one conversation


async def test_slackbot_is_never_answered(
    slack_app: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # Source: docs.slack.dev/reference/events/message.im; Slackbot's notices come from the
    # user USLACKBOT with no bot_id (docs.slack.dev/reference/objects/user-object).
    app = await started(slack_app)
    caplog.set_level(logging.INFO, logger="bot.slack.inbound.ingress")
    app.llm.add(text("Hello."))
    notice = direct_message(
        "You have been removed from #release by <@U024BE7LH>", "1700000500.000100"
    )
    notice["user"] = "USLACKBOT"
    assert (await app.post(app.envelope(notice)))[0] == 200
    assert "1700000500.000100" in caplog.text and "a message from Slackbot" in caplog.text
    await app.post(app.envelope(direct_message("hi", "1700000500.000200")))
    await app.answered("D0ALICE", "1700000500.000200")
    assert len(app.llm.requests) == 1
    assert app.slack.thread("D0ALICE", "1700000500.000100") == []


async def test_a_thread_broadcast_in_a_thread_the_bot_is_in(slack_app: SlackHarness) -> None:
    # Source: docs.slack.dev/reference/events/message/thread_broadcast, the example event.
    app = await started(slack_app)
    app.llm.add(text("First."), text("Seen the broadcast."))
    root = "1673464730.703009"
    await app.post(app.envelope(mention("This is the original message", root, user="U123ABC456")))
    await app.answered("C0CHAN", root)
    event = {
        "type": "message",
        "subtype": "thread_broadcast",
        "text": "broadcasting this reply",
        "user": "U123ABC456",
        "ts": "1673464745.620769",
        "thread_ts": root,
        "root": {
            "type": "message",
            "text": f"<@{BOT_USER}> This is the original message",
            "user": "U123ABC456",
            "ts": root,
            "team": TEAM,
            "thread_ts": root,
            "reply_count": 1,
            "reply_users_count": 1,
            "latest_reply": "1673464745.620769",
            "reply_users": ["U123ABC456"],
            "is_locked": False,
        },
        "blocks": rich_text({"type": "text", "text": "broadcasting this reply"}),
        "client_msg_id": "123abc456-0000",
        "channel": "C0CHAN",
        "event_ts": "1673464745.620769",
        "channel_type": "channel",
    }
    await app.post(app.envelope(event))
    await app.answered("C0CHAN", root, count=2)
    assert user_message_to_model(app) == "<@U123ABC456> (Sam): broadcasting this reply"


async def test_a_bare_mention_is_answered(slack_app: SlackHarness) -> None:
    # Source: the app_mention example (docs.slack.dev/reference/events/app_mention) with
    # only the mention in its text.
    app = await started(slack_app)
    app.llm.add(text("Hello! How can I help?"))
    await app.post(app.envelope(mention("", "1700000600.000100")))
    [answer] = await app.answered("C0CHAN", "1700000600.000100")
    assert answer.shown == "Hello! How can I help?"
    assert user_message_to_model(app) == "<@U0ALICE> (Alice): (mentioned you without a message)"
