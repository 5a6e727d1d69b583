"""What the model is given for a Slack message (bot/slack/inbox): authors, names, files
read with the bot token, pictures, forwards; every Slack failure leaves a turn that still
answers. Against the fake Slack Web API over HTTP and the real Redis."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from bot.config.schema import SlackConfig
from bot.llm.tokens import TokenEstimator
from bot.process.state import State
from bot.slack.client import web_client
from bot.slack.identity import Me
from bot.slack.inbound.classify import Identity, classify
from bot.slack.inbox.compose import SlackInbox
from bot.slack.inbox.files import FileReader, is_image, is_text, size_words
from bot.slack.inbox.names import SlackNames
from bot.turn.message import FileRef, SlackMessage
from bot.turn.model import Turn
from tests.fakes.slack_server import BOT_USER, TEAM, FakeSlack

ME = Identity(TEAM, BOT_USER, "B0BOT")
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")


def inbox(
    slack: FakeSlack, state: State, *, vision: bool = False, chars: int = 20_000, token: str = ""
) -> SlackInbox:
    client = web_client(token or "xoxb-test", slack.api_url)

    async def me() -> Me:
        return Me(BOT_USER, "B0BOT")

    return SlackInbox(
        client,
        SlackNames(client, state.shared.cache),
        FileReader(client, text_chars=chars),
        state.threads.asides,
        state.threads.history,
        me,
        budget_tokens=16_000,
        estimator=TokenEstimator(),
        vision=vision,
    )


def turn_of(**event: Any) -> Turn:
    base = {"type": "message", "user": "U0ANA", "ts": "50.000001", "channel": "D0ANA"}
    base.setdefault("channel_type", "im")
    decided = classify({**base, "channel_type": "im", **event}, "Ev1", ME, SlackConfig())
    assert isinstance(decided, Turn), decided
    return decided


def test_file_kinds_and_sizes() -> None:
    assert is_text(FileRef(mimetype="text/csv")) and is_text(FileRef(filetype="python"))
    assert is_text(FileRef(name="notes.MD")) and is_text(FileRef(mode="snippet"))
    assert not is_text(FileRef(mimetype="application/pdf", name="a.pdf"))
    assert is_image(FileRef(mimetype="image/png")) and not is_image(FileRef(mimetype="image/svg"))
    assert [size_words(n) for n in (12, 2_100, 3_400_000, 5_000_000_000)] == [
        "12 bytes",
        "2.1 KB",
        "3.4 MB",
        "5.0 GB",
    ]


async def test_text_files_are_read_with_the_bot_token(fake_slack: FakeSlack, state: State) -> None:
    notes = fake_slack.add_file(
        "F1", "notes.md", b"# Plan\n" + b"x" * 100, "text/markdown", pretty_type="Markdown"
    )
    report = fake_slack.add_file("F2", "report.pdf", b"%PDF-1.4", "application/pdf")
    given = await inbox(fake_slack, state, chars=50)(
        turn_of(text="summarize", subtype="file_share", files=[notes, report])
    )
    content = given.message["content"]
    assert content.startswith(
        "summarize\n[file: notes.md — Markdown, 107 bytes; its text is below]"
    )
    assert "[file: report.pdf — application/pdf, 8 bytes]" in content
    assert '<file name="notes.md" (the first 50 characters)>\n# Plan\nxxx' in content
    assert "x" * 43 + "\n</file>" in content and "x" * 44 not in content
    [download] = fake_slack.calls_to("file_download")  # the PDF is only described
    assert download.args == {"file": "F1"} and download.status == 200
    assert given.attachments == []


async def test_without_the_files_scope_slack_answers_a_sign_in_page(
    fake_slack: FakeSlack, state: State, caplog: pytest.LogCaptureFixture
) -> None:
    notes = fake_slack.add_file("F1", "notes.txt", b"secret", "text/plain")
    caplog.set_level(logging.WARNING)
    given = await inbox(fake_slack, state, token="xoxb-other")(
        turn_of(text="", subtype="file_share", files=[notes])
    )
    assert (
        given.message["content"]
        == "[file: notes.txt — text/plain, 6 bytes; its text could not be read]"
    )
    assert "files:read" in caplog.text and "secret" not in given.message["content"]


async def test_pictures_are_shown_for_this_turn_only_when_the_model_has_vision(
    fake_slack: FakeSlack, state: State
) -> None:
    photo = fake_slack.add_file("F3", "shelf.png", PNG, "image/png", pretty_type="PNG")
    turn = turn_of(text="what is on the shelf?", subtype="file_share", files=[photo])
    seeing = await inbox(fake_slack, state, vision=True)(turn)
    assert seeing.message["content"] == (
        "what is on the shelf?\n[file: shelf.png — PNG, 33 bytes; shown to you]"
    )
    [pictures] = seeing.attachments
    assert pictures["role"] == "user"
    assert pictures["content"][0] == {
        "type": "text",
        "text": "The pictures shared with the next message:",
    }
    assert pictures["content"][1]["image_url"]["url"].startswith(
        "data:image/png;base64,iVBORw0KGgo"
    )
    blind = await inbox(fake_slack, state)(turn)
    assert blind.attachments == [] and "you cannot see images here" in blind.message["content"]


async def test_slack_connect_files_are_described_by_files_info(
    fake_slack: FakeSlack, state: State
) -> None:
    """Source: a webhook captured from a Slack Connect DM (slack-web's golden test
    message_file_share_slack_connect.json): only the id, ``file_access: check_file_info``."""
    fake_slack.add_file("F12345678", "data.csv", b"a,b\n1,2\n", "text/csv", pretty_type="CSV")
    stub = {"id": "F12345678", "mode": "file_access", "file_access": "check_file_info"}
    given = await inbox(fake_slack, state)(
        turn_of(text="message message message", subtype="file_share", files=[stub])
    )
    assert "[file: data.csv — CSV, 8 bytes; its text is below]" in given.message["content"]
    assert '<file name="data.csv">\na,b\n1,2\n\n</file>' in given.message["content"]
    assert len(fake_slack.calls_to("files.info")) == 1


async def test_names_are_looked_up_once_and_failures_leave_the_ids(
    fake_slack: FakeSlack, state: State, caplog: pytest.LogCaptureFixture
) -> None:
    fake_slack.users["U0BO"] = {"id": "U0BO", "profile": {"display_name": "Bo"}}
    fake_slack.channels["C0OPS"] = {"id": "C0OPS", "name": "ops"}
    read = inbox(fake_slack, state)
    turn = turn_of(text="ask <@U0BO> and <@U0GONE> in <#C0OPS> and <#C0LOST>")
    given = await read(turn)
    assert given.message["content"] == "ask <@U0BO> (Bo) and <@U0GONE> in #ops and <#C0LOST>"
    assert "users_info failed" in caplog.text  # U0GONE: logged, the turn goes on
    calls = len(fake_slack.calls)
    again = await inbox(fake_slack, state)(turn)  # another replica: the Redis cache
    assert again == given
    asked = sorted(
        (c.method, c.args.get("user") or c.args.get("channel")) for c in fake_slack.calls[calls:]
    )
    assert asked == [("conversations.info", "C0LOST"), ("users.info", "U0GONE")]  # not found
    calls = len(fake_slack.calls)
    await read(turn)  # a failed id is not asked again at once
    assert len(fake_slack.calls) == calls


async def test_a_slack_outage_leaves_a_turn_that_still_answers(
    fake_slack: FakeSlack, state: State
) -> None:
    notes = fake_slack.add_file("F1", "notes.txt", b"hello", "text/plain")
    fake_slack.outage(["users.info", "file_download", "conversations.replies"], 30)
    turn = classify(
        {
            "type": "app_mention",
            "user": "U0ANA",
            "text": f"<@{BOT_USER}> read this",
            "ts": "60.000002",
            "thread_ts": "60.000001",
            "channel": "C0CHAN",
            "files": [notes],
        },
        "Ev",
        ME,
        SlackConfig(),
    )
    assert isinstance(turn, Turn)
    turn = replace(turn, new_thread=True)
    given = await inbox(fake_slack, state)(turn)
    assert given.message["content"] == (
        "<@U0ANA>: read this\n[file: notes.txt — text/plain, 5 bytes; its text could not be read]"
    )


def test_a_message_travels_in_the_turn_and_back() -> None:
    from bot.turn.message import SlackMessage

    event = {
        "type": "message",
        "user": "U1",
        "text": "see <#C1>",
        "ts": "1.2",
        "team": "T9",
        "blocks": [{"type": "rich_text"}],
        "files": [{"id": "F1", "name": "a.txt", "size": 3, "preview": "abc", "thumb_64": "x"}],
        "attachments": [
            {"is_share": True, "author_id": "U2", "message_blocks": [{"message": {"text": "hi"}}]},
            {"title": "a link preview", "original_url": "https://example.com"},
        ],
    }
    message = SlackMessage.of(event)
    compact = message.to_dict()
    assert "blocks" not in compact and compact["user_team"] == "T9"
    assert compact["files"] == [{"id": "F1", "name": "a.txt", "size": 3}]
    assert [f["text"] for f in compact["forwards"]] == ["hi"]  # the preview is no forward
    assert SlackMessage.from_dict({**compact, "later_field": 1}) == message


def test_thread_lines_and_the_budget() -> None:
    from bot.slack.inbox.render import Names, line, newest_within
    from bot.turn.message import SlackMessage

    names = Names({"U1": "Ana"}, {})
    me = Me(BOT_USER, "B0BOT")
    said = [
        SlackMessage(user="U1", text="hello"),
        SlackMessage(user=BOT_USER, text="Hi Ana."),
        SlackMessage(user="B0CI", bot_name="CI", text="build failed"),
        SlackMessage(user="U3", text="", files=(FileRef(id="F", name="log.txt", size=2100),)),
    ]
    assert [line(m, names, me) for m in said] == [
        "<@U1> (Ana): hello",
        "you (the assistant): Hi Ana.",
        "CI (a bot): build failed",
        "<@U3>: [file: log.txt — unknown type, 2.1 KB]",
    ]
    lines = ["a" * 40] * 10  # ten tokens and one for the line break each
    assert newest_within(lines, 55, lambda text: len(text) // 4) == 5
    assert newest_within(lines, 5, lambda text: len(text) // 4) == 0


def test_the_bot_token_goes_only_to_slacks_hosts() -> None:
    slack = FileReader(web_client("xoxb-test", "https://slack.com/api/"), text_chars=10)
    gov = FileReader(web_client("xoxb-test", "https://slack-gov.com/api/"), text_chars=10)
    assert slack._may_send_token("https://files.slack.com/files-pri/T1-F1/a.txt")
    assert gov._may_send_token("https://files.slack-gov.com/files-pri/T1-F1/a.txt")
    for reader in (slack, gov):
        assert not reader._may_send_token("https://docs.google.com/document/d/1")
        assert not reader._may_send_token("https://files.slack.com.evil.example/a.txt")


async def test_a_rate_limited_slack_is_not_waited_out(
    fake_slack: FakeSlack, state: State, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 asks to come back in 30 s: names and the thread are given up on in time."""
    import bot.slack.inbox.compose as compose
    from bot.slack.inbox.thread import earlier_messages

    monkeypatch.setattr(compose, "NAMES_WITHIN_S", 0.3)
    fake_slack.fail("users.info", "ratelimited", status=429, retry_after=30)
    given = await inbox(fake_slack, state)(turn_of(text="ask <@U0BO>"))
    assert given.message["content"] == "ask <@U0BO>"
    fake_slack.add_user_message("C0CHAN", "70.000001", "U0ANA", "root")
    fake_slack.fail("conversations.replies", "ratelimited", status=429, retry_after=30)
    client = web_client("xoxb-test", fake_slack.api_url)
    assert await earlier_messages(client, "C0CHAN", "70.000001", "70.000009", within_s=0.3) == []


async def test_a_message_it_cannot_read_whole_is_still_answered(
    fake_slack: FakeSlack, state: State, caplog: pytest.LogCaptureFixture
) -> None:
    turn = turn_of(text="hello <@U0BO>")
    broken = replace(turn, message=SlackMessage.from_dict({"files": [{"size": "big"}]}))
    given = await inbox(fake_slack, state)(broken)
    assert given.message == {"role": "user", "content": "hello <@U0BO>"}
    assert "could not read message 50.000001 in D0ANA whole" in caplog.text
