"""One Slack message that is posted once and then edited at most once per interval.

Callers set the latest content whenever they like; the message catches up in the
background, so a turn with twenty tool calls makes a handful of ``chat.update`` calls, not
forty, and the agent loop never waits on Slack.
"""

from __future__ import annotations

import asyncio
import contextlib

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks import Blocks
from bot.slack.calls import safe_call


class CoalescedMessage:
    def __init__(
        self, client: AsyncWebClient, channel: str, thread_ts: str, interval_s: float
    ) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.interval_s = interval_s
        self.ts: str | None = None
        self._content: tuple[str, Blocks] | None = None
        self._shown: tuple[str, Blocks] | None = None
        self._last_write = 0.0
        self._writer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def adopt(self, ts: str) -> None:
        """Take over an existing message (a stream that expired) instead of posting one."""
        self.ts = ts

    def set(self, text: str, blocks: Blocks) -> None:
        """Show this next; written now if nothing was written lately, else soon."""
        self._content = (text, blocks)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._catch_up())

    async def flush(self) -> None:
        """Wait until the latest content is on screen."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer
        if self._content != self._shown:
            await self._catch_up()

    async def delete(self) -> None:
        await self.flush()
        if self.ts is not None:
            await safe_call(self.client.chat_delete, channel=self.channel, ts=self.ts)
            self.ts = None

    async def _catch_up(self) -> None:
        async with self._lock:
            loop = asyncio.get_running_loop()
            while self._content is not None and self._content != self._shown:
                if self.ts is not None:
                    wait = self._last_write + self.interval_s - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)
                content = self._content
                text, blocks = content
                if self.ts is None:
                    response = await safe_call(
                        self.client.chat_postMessage,
                        channel=self.channel,
                        thread_ts=self.thread_ts,
                        text=text,
                        blocks=blocks,
                    )
                    if response is None:
                        return
                    self.ts = str(response["ts"])
                else:
                    await safe_call(
                        self.client.chat_update,
                        channel=self.channel,
                        ts=self.ts,
                        text=text,
                        blocks=blocks,
                    )
                self._shown = content
                self._last_write = loop.time()
