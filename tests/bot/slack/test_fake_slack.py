"""The fake Slack's thread listing, message metadata and outages, through the real slack_sdk
client (the fault tests rely on them)."""

from __future__ import annotations

import json
import time

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_server import BOT_ID, BOT_USER, FakeSlack

CHANNEL = "C0CHAN"
METADATA = {"event_type": "slack_agent", "event_payload": {"turn": "1-0", "kind": "answer"}}


@pytest.fixture
def client(fake_slack: FakeSlack) -> AsyncWebClient:
    # No retry handlers: a refused call must show up as the error it is.
    return AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url, retry_handlers=[])


async def thread_with_replies(fake_slack: FakeSlack, client: AsyncWebClient) -> str:
    """A person's root message, a bot reply with metadata, a person's reply, a bot reply."""
    root = fake_slack.new_ts()
    fake_slack.add_user_message(CHANNEL, root, "U0ALICE", "first question")
    await client.chat_postMessage(
        channel=CHANNEL, thread_ts=root, text="first answer", metadata=METADATA
    )
    fake_slack.add_user_message(CHANNEL, fake_slack.new_ts(), "U0BOB", "second", thread_ts=root)
    await client.chat_postMessage(channel=CHANNEL, thread_ts=root, text="second answer")
    return root


async def test_replies_list_people_and_bot_oldest_first(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    root = await thread_with_replies(fake_slack, client)
    fake_slack.add_user_message(CHANNEL, fake_slack.new_ts(), "U0ALICE", "elsewhere")

    listed = (await client.conversations_replies(channel=CHANNEL, ts=root))["messages"]

    assert [(m["text"], m["user"], m.get("bot_id")) for m in listed] == [
        ("first question", "U0ALICE", None),
        ("first answer", BOT_USER, BOT_ID),
        ("second", "U0BOB", None),
        ("second answer", BOT_USER, BOT_ID),
    ]
    assert all(m["thread_ts"] == root for m in listed)
    assert [float(m["ts"]) for m in listed] == sorted(float(m["ts"]) for m in listed)
    assert all("metadata" not in m for m in listed)
    # The bot's own messages are still all that FakeSlack.thread lists.
    assert [m.text for m in fake_slack.thread(CHANNEL, root)] == ["first answer", "second answer"]


async def test_replies_carry_metadata_only_when_asked(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    root = await thread_with_replies(fake_slack, client)

    listed = (
        await client.conversations_replies(channel=CHANNEL, ts=root, include_all_metadata=True)
    )["messages"]

    assert [m.get("metadata") for m in listed] == [None, METADATA, None, None]


async def test_replies_are_paginated_and_any_reply_names_the_thread(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    root = await thread_with_replies(fake_slack, client)
    reply = fake_slack.thread(CHANNEL, root)[-1].ts

    texts: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.conversations_replies(channel=CHANNEL, ts=reply, limit=3, cursor=cursor)
        pages += 1
        texts += [m["text"] for m in page["messages"]]
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            assert page["has_more"] is False
            break
        assert page["has_more"] is True

    assert pages == 2
    assert texts == ["first question", "first answer", "second", "second answer"]


async def test_replies_refuse_unknown_threads_and_cursors(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    root = await thread_with_replies(fake_slack, client)
    with pytest.raises(SlackApiError) as unknown:
        await client.conversations_replies(channel=CHANNEL, ts="1.000001")
    assert unknown.value.response["error"] == "thread_not_found"
    with pytest.raises(SlackApiError) as bad_cursor:
        await client.conversations_replies(channel=CHANNEL, ts=root, cursor="not a cursor")
    assert bad_cursor.value.response["error"] == "invalid_cursor"


async def test_metadata_is_kept_from_post_update_and_stop_stream(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="a", metadata=METADATA)
    message = fake_slack.messages[(CHANNEL, posted["ts"])]
    assert message.metadata == METADATA

    edited = {"event_type": "slack_agent", "event_payload": {"kind": "notice"}}
    await client.chat_update(channel=CHANNEL, ts=posted["ts"], text="b", metadata=edited)
    assert message.metadata == edited and message.text == "b"

    started = await client.chat_startStream(channel=CHANNEL, thread_ts=posted["ts"])
    stopped = {"event_type": "slack_agent", "event_payload": {"kind": "answer", "part": 1}}
    await client.chat_stopStream(
        channel=CHANNEL, ts=started["ts"], markdown_text="done", metadata=stopped
    )
    streamed = fake_slack.messages[(CHANNEL, started["ts"])]
    assert streamed.metadata == stopped and not streamed.streaming and streamed.text == "done"


async def test_metadata_sent_as_a_json_string_in_a_form_post(fake_slack: FakeSlack) -> None:
    form = {"channel": CHANNEL, "text": "form", "metadata": json.dumps(METADATA)}
    async with (
        aiohttp.ClientSession() as session,
        session.post(fake_slack.api_url + "chat.postMessage", data=form) as response,
    ):
        ts = (await response.json())["ts"]
    assert fake_slack.messages[(CHANNEL, ts)].metadata == METADATA

    form["metadata"] = "{not json"
    async with (
        aiohttp.ClientSession() as session,
        session.post(fake_slack.api_url + "chat.postMessage", data=form) as response,
    ):
        assert (await response.json()) == {"ok": False, "error": "invalid_metadata_format"}


async def test_outage_fails_its_methods_for_its_window_only(
    fake_slack: FakeSlack, client: AsyncWebClient
) -> None:
    before = time.monotonic()
    fake_slack.outage(["chat.postMessage", "chat.update"], seconds=0.5)
    assert not fake_slack.outage_over()

    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel=CHANNEL, text="during")
    assert refused.value.response.status_code == 503
    assert refused.value.response["error"] == "service_unavailable"
    await client.assistant_threads_setStatus(channel_id=CHANNEL, thread_ts="1.0", status="x")

    ended = await fake_slack.wait_outage_over()
    assert fake_slack.outage_over() and time.monotonic() >= ended
    await client.chat_postMessage(channel=CHANNEL, text="after")

    assert [(c.method, c.status) for c in fake_slack.calls] == [
        ("chat.postMessage", 503),
        ("assistant.threads.setStatus", 200),
        ("chat.postMessage", 200),
    ]
    assert before <= fake_slack.calls[0].at < ended <= fake_slack.calls[-1].at
    assert [m.text for m in fake_slack.messages.values()] == ["after"]
