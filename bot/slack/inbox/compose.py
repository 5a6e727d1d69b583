"""What the model is given for a turn from Slack: the person's message with its author,
every text code made readable, its forwards and files, and what the thread said that the
model has not seen (the thread before the bot was mentioned in it, replies between other
people since its last answer).

Slack calls made here: ``conversations.replies`` (only on a turn that joins a thread:
one page per 200 messages), ``users.info`` / ``conversations.info`` for names not cached,
``files.info`` for files Slack Connect describes only by id, and each file read. Every one of
them may fail: it is logged, and the turn is answered with what could be had.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.messages import user_message
from bot.llm.tokens import TokenEstimator
from bot.slack.identity import Me
from bot.slack.inbox.files import FileReader, TextContent, is_image, is_text
from bot.slack.inbox.names import SlackNames
from bot.slack.inbox.render import (
    BARE_MENTION,
    BARE_MENTION_IN_THREAD,
    Names,
    asides_block,
    author,
    body,
    earlier_block,
    file_contents,
    line,
    newest_within,
    wanted_names,
)
from bot.slack.inbox.thread import earlier_messages
from bot.state.redis.errors import REDIS_DOWN
from bot.turn.message import FileRef, SlackMessage
from bot.turn.model import Turn, TurnKind
from bot.turn.ports import TurnInput
from bot.turn.store.asides import ThreadAsides
from bot.turn.store.history import RedisHistory

log = logging.getLogger(__name__)

IMAGES_NOTE = "The pictures shared with the next message:"
NAMES_WITHIN_S = 3.0  # users.info / conversations.info; a 429's Retry-After is not waited out


class SlackInbox:
    """The worker's ``message_for``: a turn's Slack message as the model's input."""

    def __init__(
        self,
        client: AsyncWebClient,
        names: SlackNames,
        files: FileReader,
        asides: ThreadAsides,
        history: RedisHistory,
        me: Callable[[], Awaitable[Me]],
        *,
        budget_tokens: int,
        estimator: TokenEstimator,
        vision: bool,
    ) -> None:
        self.client = client
        self.names = names
        self.files = files
        self.asides = asides
        self.history = history
        self.me = me
        self.budget_tokens = budget_tokens
        self.estimator = estimator
        self.vision = vision

    async def __call__(self, turn: Turn) -> TurnInput:
        if turn.message is None:  # queued before messages were carried whole
            return TurnInput(user_message(turn.text))
        try:
            return await self._read(turn, turn.message)
        except asyncio.CancelledError:
            raise
        except Exception:  # a message this code cannot read must not cost the answer
            log.exception("could not read message %s in %s whole", turn.message_ts, turn.channel)
            return TurnInput(user_message(turn.text))

    async def _read(self, turn: Turn, message: SlackMessage) -> TurnInput:
        me = await self.me()
        in_thread = turn.thread_ts != turn.message_ts
        # What Slack is asked runs at once: the thread, the replies heard, the files' details;
        # then the names and the files' contents.
        earlier, heard, files = await asyncio.gather(
            self._earlier(turn, in_thread, me),
            self._asides(turn) if in_thread and turn.kind.in_channel else _nothing(),
            asyncio.gather(*(self.files.described(f) for f in message.files)),
        )
        message = replace(message, files=tuple(files))
        users, channels = wanted_names([*earlier, *heard])
        more_users, more_channels = wanted_names([message], authors=turn.kind.in_channel)
        users, channels = users | more_users, channels | more_channels
        users.discard(me.user_id)
        names, texts, images = await asyncio.gather(
            self._names(users, channels), self._texts(message.files), self._images(message)
        )

        blocks: list[str] = []
        if earlier:
            lines = [line(m, names, me) for m in earlier]
            kept = newest_within(lines, self.budget_tokens, self._tokens)
            blocks.append(earlier_block(lines[len(lines) - kept :], len(lines) - kept))
        if heard:
            lines = [line(m, names, me) for m in heard]
            kept = max(newest_within(lines, self.budget_tokens, self._tokens), 1)
            blocks.append(asides_block(lines[len(lines) - kept :]))
        said = body(message, names, me, lambda f: self._note(f, texts, images))
        if not said:
            said = BARE_MENTION_IN_THREAD if in_thread else BARE_MENTION
        if turn.kind.in_channel:
            said = f"{author(message, names, me)}: {said}"
        blocks.append(said)
        limit = self.files.text_chars
        blocks += [
            file_contents(f, texts[f.id].text, texts[f.id].truncated, limit)
            for f in message.files
            if f.id in texts
        ]
        attachments: list[dict[str, Any]] = []
        if images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": IMAGES_NOTE}]
            parts += [{"type": "image_url", "image_url": {"url": url}} for url in images.values()]
            attachments.append({"role": "user", "content": parts})
        return TurnInput(user_message("\n\n".join(blocks)), attachments)

    async def _earlier(self, turn: Turn, in_thread: bool, me: Me) -> list[SlackMessage]:
        """The thread before the bot was mentioned in it, when this turn joins it and nothing
        of the thread is in the history yet."""
        if turn.kind is not TurnKind.MENTION or not in_thread or not turn.new_thread:
            return []
        if await self.history.has_turns(turn.thread_key):
            return []  # the thread's turns are there already (its start came late)
        return await earlier_messages(
            self.client, turn.channel, turn.thread_ts, turn.message_ts, bot_user_id=me.user_id
        )

    async def _names(self, users: set[str], channels: set[str]) -> Names:
        """Names found within ``NAMES_WITHIN_S``; without them the ids are shown as they are."""
        try:
            async with asyncio.timeout(NAMES_WITHIN_S):
                found = await asyncio.gather(self.names.users(users), self.names.channels(channels))
        except TimeoutError:
            log.warning("names not found within %.0f s; ids shown without them", NAMES_WITHIN_S)
            return Names()
        return Names(*found)

    def _tokens(self, text: str) -> int:
        return self.estimator.chars_tokens(len(text))

    async def _asides(self, turn: Turn) -> list[SlackMessage]:
        try:
            taken = await self.asides.take(turn.thread_key, turn.message_ts)
        except REDIS_DOWN as exc:
            log.warning("replies heard in %s unreadable (%s); going on", turn.thread_key, exc)
            return []
        heard = []
        for item in taken:
            try:
                heard.append(SlackMessage.from_dict(json.loads(item)))
            except (ValueError, TypeError):
                log.warning("skipping an unreadable reply heard in %s", turn.thread_key)
        return heard

    async def _texts(self, files: tuple[FileRef, ...]) -> dict[str, TextContent]:
        if self.files.text_chars <= 0:
            return {}
        wanted = [f for f in files if is_text(f) and f.id]
        read = await asyncio.gather(*(self.files.text(f) for f in wanted))
        return {f.id: content for f, content in zip(wanted, read, strict=True) if content}

    async def _images(self, message: SlackMessage) -> dict[str, str]:
        if not self.vision:
            return {}
        wanted = [f for f in message.files if is_image(f) and f.id]
        read = await asyncio.gather(*(self.files.image(f) for f in wanted))
        return {f.id: url for f, url in zip(wanted, read, strict=True) if url}

    def _note(self, file: FileRef, texts: dict[str, TextContent], images: dict[str, str]) -> str:
        """What the model is told about reading ``file``."""
        if is_text(file):
            if file.id in texts:
                return "its text is below"
            if self.files.text_chars <= 0:
                return "its text is not given to you"
            return "its text could not be read"
        if is_image(file):
            if not self.vision:
                return "an image; you cannot see images here"
            return "shown to you" if file.id in images else "the image could not be loaded"
        return ""


async def _nothing() -> list[SlackMessage]:
    return []
