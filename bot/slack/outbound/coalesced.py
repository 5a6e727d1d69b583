"""One Slack message that is posted once, edited at most once per interval while a turn
runs, and written at once, for sure, at the end.

Callers set the latest content whenever they like, or say how to render it
(:meth:`set_rendered`: rendered once, when it is written, however often it changed since);
the message catches up in the background, so a turn with twenty tool calls makes a handful
of ``chat.update`` calls, not forty, and the agent loop never waits on Slack. Background
writes are best effort (a failure is logged and left for the end). :meth:`write_now` is the
end: it skips the edit window and raises what Slack answered, so delivery can retry it.

Every write first asks the guard (does this owner still hold the turn's lease?). Creating
the message is announced before and recorded after (``before_post``, ``on_posted``), so a
post whose outcome was never learnt (a crash, a timeout, a 5xx after Slack applied it) is
looked for by its tag before anything is posted again: ``before_post`` returns the ts of
the message found, which is then edited instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.messages import Blocks
from bot.slack.errors import error_code
from bot.turn.store.lease import Aborted

log = logging.getLogger(__name__)

Hook = Callable[[], Awaitable[None]]
TsHook = Callable[[str], Awaitable[None]]
BeforePost = Callable[[], Awaitable[str | None]]
Content = tuple[str, Blocks]
Render = Callable[[], Content]


async def _nothing() -> None:
    return None


async def _nothing_ts(ts: str) -> None:
    return None


async def _post_it() -> str | None:
    return None


async def _reaped(writer: asyncio.Task[None] | None) -> None:
    """Wait for a cancelled background writer to end."""
    if writer is not None:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer


class CoalescedMessage:
    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str,
        interval_s: float,
        *,
        guard: Callable[[], bool] = lambda: True,
        metadata: dict[str, Any] | None = None,
        before_post: BeforePost = _post_it,
        on_posted: TsHook = _nothing_ts,
        on_written: Hook = _nothing,
    ) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.interval_s = interval_s
        self.guard = guard
        self.metadata = metadata
        self.before_post = before_post
        self.on_posted = on_posted
        self.on_written = on_written
        self.ts: str | None = None
        self._content: Content | Render | None = None  # a render is called when written
        self._shown: Content | None = None
        self._last_write = 0.0
        self._writer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._hurry = asyncio.Event()

    def adopt(self, ts: str) -> None:
        """Take over an existing message (an expired stream, an earlier attempt's post)."""
        self.ts = ts

    def set(self, text: str, blocks: Blocks) -> None:
        """Show this next; written now if nothing was written lately, else soon."""
        self._changed((text, blocks))

    def set_rendered(self, render: Render) -> None:
        """Show what ``render`` returns when the next write goes out: content that changes
        with every streamed piece is built once per write, not once per piece."""
        self._changed(render)

    def _changed(self, content: Content | Render) -> None:
        self._content = content
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._catch_up())

    def _latest(self) -> Content | None:
        """The content to write now (a pending render is rendered, once)."""
        if callable(self._content):
            self._content = self._content()
        return self._content

    async def write_now(self, text: str, blocks: Blocks) -> None:
        """Write this at once, skipping the edit window. Raises Slack's error, or
        :class:`Aborted` when the guard refuses."""
        self._content = (text, blocks)
        self._hurry.set()
        async with self._lock:
            if self._content != self._shown or self.ts is None:
                await self._write(self._content)

    async def delete_now(self) -> None:
        """Delete the message at once, if it was posted. Raises Slack's error (a message
        that is already gone counts as deleted)."""
        self._hurry.set()
        async with self._lock:  # a write in flight finishes first: its ts is known then
            writer = self._stop_writer()
            if self.ts is not None:
                if not self.guard():
                    raise Aborted("the turn's lease is gone")
                try:
                    await self.client.chat_delete(channel=self.channel, ts=self.ts)
                except Exception as exc:
                    if error_code(exc) not in ("message_not_found", "cant_delete_message"):
                        raise
                self.ts = None
        await _reaped(writer)

    async def quiet(self) -> None:
        """Stop writing in the background, without cutting a write in flight short: that
        one ends first (its outcome is recorded), one not yet started is not made."""
        async with self._lock:  # held: no background write is half done
            writer = self._stop_writer()
        await _reaped(writer)

    def _stop_writer(self) -> asyncio.Task[None] | None:
        """With the lock held: the background writer, cancelled (it waits for its turn or
        for the edit window: no call is cut short)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.cancel()
        return writer

    async def settle(self) -> None:
        """Wait until a write in flight has finished (its outcome is then recorded)."""
        async with self._lock:
            return

    async def close(self) -> None:
        """Stop writing in the background (makes no Slack call; a write in flight is
        cancelled, and a post it made is found by its tag later)."""
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writer
            self._writer = None

    async def _catch_up(self) -> None:
        loop = asyncio.get_running_loop()
        while self._content is not None and self._content != self._shown:
            if self.ts is not None:
                wait = self._last_write + self.interval_s - loop.time()
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._hurry.wait(), wait)
            async with self._lock:
                content = self._latest()
                if content is None or content == self._shown:
                    return
                try:
                    await self._write(content)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.info(
                        "updating a message in %s failed (%s); it is written at the end",
                        self.channel,
                        error_code(exc),
                    )
                    return

    async def _write(self, content: Content) -> None:
        if not self.guard():
            raise Aborted("the turn's lease is gone")
        text, blocks = content
        if self.ts is None:
            self.ts = await self.before_post()
        if self.ts is None:
            response = await self.client.chat_postMessage(
                channel=self.channel,
                thread_ts=self.thread_ts,
                text=text,
                blocks=blocks,
                metadata=self.metadata,
            )
            self.ts = str(response["ts"])
            await self.on_posted(self.ts)
        else:
            await self.client.chat_update(
                channel=self.channel,
                ts=self.ts,
                text=text,
                blocks=blocks,
                metadata=self.metadata,
            )
        self._shown = content
        self._last_write = asyncio.get_running_loop().time()
        await self.on_written()
