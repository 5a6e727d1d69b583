"""Reading a thread the bot was just brought into: ``conversations.replies``, 200 messages a
page (https://docs.slack.dev/reference/methods/conversations.replies), only the messages
written before the one that mentioned the bot.

A page that fails is logged; what was read before it is used, so the turn still answers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.calls import safe_call
from bot.slack.text import mentions
from bot.turn.message import SLACKBOT, SlackMessage

log = logging.getLogger(__name__)

PAGE_SIZE = 200
MAX_PAGES = 50  # 10,000 messages: far beyond any budget; newer ones are kept
READ_WITHIN_S = 15.0  # all pages; then what was read is used (a 429's Retry-After is long)
SHOWN_SUBTYPES = {"", "thread_broadcast", "bot_message", "file_share", "me_message"}


async def earlier_messages(
    client: AsyncWebClient,
    channel: str,
    thread_ts: str,
    before_ts: str,
    *,
    bot_user_id: str | None = None,
    within_s: float = READ_WITHIN_S,
) -> list[SlackMessage]:
    """The thread's messages before ``before_ts``, oldest first (the root included), except
    those that mention the bot: each of those is a turn of its own (answered, or queued
    when Slack delivers messages out of order), so its text reaches the model there."""
    listed: list[dict[str, Any]] = []
    cursor = ""
    deadline = asyncio.get_running_loop().time() + within_s
    for _ in range(MAX_PAGES):
        arguments: dict[str, Any] = {
            "channel": channel,
            "ts": thread_ts,
            "limit": PAGE_SIZE,
            "latest": before_ts,
            "inclusive": False,
        }
        if cursor:
            arguments["cursor"] = cursor
        left = deadline - asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(max(left, 0.001)):
                page = await safe_call(client.conversations_replies, **arguments)
        except TimeoutError:
            log.warning("conversations.replies took longer than %.0f s", within_s)
            page = None
        if page is None:
            log.warning(
                "read %d earlier messages of thread %s in %s before a failure; going on",
                len(listed),
                thread_ts,
                channel,
            )
            break
        listed.extend(m for m in page.get("messages") or () if isinstance(m, dict))
        cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
        if not cursor or not page.get("has_more", True):
            break
    else:
        log.warning("thread %s in %s is longer than %d pages", thread_ts, channel, MAX_PAGES)
    messages = (SlackMessage.of(item) for item in listed)
    return [m for m in messages if _shown(m, before_ts, bot_user_id)]


def _shown(message: SlackMessage, before_ts: str, bot_user_id: str | None) -> bool:
    if message.user == SLACKBOT or message.subtype not in SHOWN_SUBTYPES:
        return False
    if mentions(message.text, bot_user_id):
        return False
    try:
        return float(message.ts) < float(before_ts)
    except ValueError:
        return False
