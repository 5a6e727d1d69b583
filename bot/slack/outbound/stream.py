"""One streamed message: task cards and text, sent to Slack one call at a time.

What is written is queued as chunks (``task_update`` for a tool call, ``markdown_text`` for
text). A background sender sends whatever is queued as soon as the previous call returned:
nothing waits for an edit window, and what arrives meanwhile goes together in the next call.
Text alone waits until ``buffer_chars`` have gathered (the end sends the rest with
``chat.stopStream``). The first call starts the stream (``chat.startStream``, recorded before
and after, like every message the bot creates); the end stops it with the answer's last
text, the feedback buttons, the turn's tag and, where Slack's agent sessions are used, the
session back to "active", all in one call.

A call Slack refuses ends the streaming: the writer says why (``failed``), and the answer is
written as an ordinary message instead. A stream the person stopped in Slack
(``user_stopped``) is never written to again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.models.messages.chunk import MarkdownTextChunk, TaskUpdateChunk

from bot.slack.blocks.broadcasts import whole_until
from bot.slack.errors import STOPPED_BY_USER, error_code
from bot.slack.outbound.thread import TurnThread
from bot.turn.store.lease import Aborted

log = logging.getLogger(__name__)

Chunk = dict[str, Any]


class StreamWriter:
    def __init__(
        self,
        thread: TurnThread,
        *,
        task_display: str,
        buffer_chars: int,
        on_user_stop: Callable[[], Awaitable[None]],
    ) -> None:
        self.thread = thread
        self.task_display = task_display
        self.buffer_chars = buffer_chars
        self.on_user_stop = on_user_stop  # ask the turn to stop
        self.ts = ""
        self.failed: BaseException | None = None
        self.user_stopped = False
        self.written = ""  # all the text given to the stream, in order
        self.ended = False  # chat.stopStream took it: the message shows what was given
        self._pending: list[Chunk] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._sender: asyncio.Task[None] | None = None

    @property
    def working(self) -> bool:
        return self.failed is None and not self.user_stopped

    # --- what to show --------------------------------------------------------------------

    def text(self, piece: str) -> None:
        self.written += piece
        self._queue_text(piece)
        self._kick()

    def _queue_text(self, piece: str) -> None:
        if not piece:
            return
        if self._pending and self._pending[-1]["type"] == MarkdownTextChunk.type:
            self._pending[-1]["text"] += piece
        else:
            self._pending.append(MarkdownTextChunk(text=piece).to_dict())

    def task(self, chunk: TaskUpdateChunk) -> None:
        """A task card's latest state; an update still queued for the same card is replaced."""
        update = chunk.to_dict()
        for index, queued in enumerate(self._pending):
            if queued["type"] == TaskUpdateChunk.type and queued["id"] == update["id"]:
                self._pending[index] = update
                break
        else:
            self._pending.append(update)
        self._kick()

    def _kick(self) -> None:
        if not self.working:
            return
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        self._wake.set()

    def _ready(self) -> bool:
        if not self._pending:
            return False
        if any(chunk["type"] != MarkdownTextChunk.type for chunk in self._pending):
            return True
        return sum(len(chunk["text"]) for chunk in self._pending) >= self.buffer_chars

    async def _send(self) -> None:
        while self.working:
            await self._wake.wait()
            self._wake.clear()
            while self.working and self._ready():
                chunks = self._take()
                if not chunks:
                    break  # only the start of a mention so far: wait for its end
                self._idle.clear()
                try:
                    await self._call(chunks)
                finally:
                    self._idle.set()

    def _take(self) -> list[Chunk]:
        """What is queued, but text that may open a mention stays queued until it is whole
        (a mention cut between two appends would escape the defusing of each)."""
        chunks, self._pending = self._pending, []
        if chunks and chunks[-1]["type"] == MarkdownTextChunk.type:
            text = chunks[-1]["text"]
            cut = whole_until(text)
            if cut < len(text):
                self._pending = [MarkdownTextChunk(text=text[cut:]).to_dict()]
                if cut:
                    chunks[-1] = {**chunks[-1], "text": text[:cut]}
                else:
                    chunks.pop()
        return chunks

    async def _call(self, chunks: list[Chunk]) -> None:
        try:
            if not self.thread.ledger.valid():
                raise Aborted("the turn's lease is gone")
            if not self.ts:
                record = self.thread.ledger.record
                record.posting()
                await self.thread.ledger.save()
                response = await self.thread.client.chat_startStream(
                    channel=self.thread.turn.channel,
                    thread_ts=self.thread.turn.thread_ts,
                    recipient_team_id=self.thread.turn.team or None,
                    recipient_user_id=self.thread.turn.user or None,
                    task_display_mode=self.task_display,
                    chunks=chunks,
                )
                self.ts = str(response["ts"])
                record.created(self.ts, streaming=True)
                await self.thread.ledger.save()
            else:
                if await self.thread.was_stopped(self.ts):  # Slack's stop: not one more write
                    await self._user_stopped()
                    return
                await self.thread.ledger.save_if_changed()  # the cards this call shows
                await self.thread.client.chat_appendStream(
                    channel=self.thread.turn.channel, ts=self.ts, chunks=chunks
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._failed(exc)

    async def _failed(self, exc: BaseException) -> None:
        if error_code(exc) in STOPPED_BY_USER or (
            self.ts and await self.thread.was_stopped(self.ts)
        ):
            await self._user_stopped()
            return
        log.info(
            "streaming stopped in %s (%s); posting and editing instead",
            self.thread.turn.channel,
            error_code(exc),
        )
        self.failed = exc

    async def _user_stopped(self) -> None:
        log.info("the person stopped the stream in %s", self.thread.turn.channel)
        self.user_stopped = True
        self.thread.ledger.record.user_stopped()
        with contextlib.suppress(Exception):
            await self.thread.ledger.save()
            await self.on_user_stop()

    # --- the end -------------------------------------------------------------------------

    async def settle(self, timeout_s: float) -> bool:
        """Wait for the call in flight; False when it did not return in time (what it
        carried may be missing from the stream)."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def stop(
        self,
        text: str,
        *,
        blocks: list[dict[str, Any]] | None,
        metadata: dict[str, Any],
        session_status: str | None,
    ) -> None:
        """End the stream with what is still queued and ``text`` (after the call in flight,
        which the caller has let settle). Raises what Slack said."""
        await self.close()
        self.written += text
        self._queue_text(text)
        chunks, self._pending = self._pending, []
        if not self.thread.ledger.valid():
            raise Aborted("the turn's lease is gone")
        await self.thread.client.chat_stopStream(
            channel=self.thread.turn.channel,
            ts=self.ts,
            chunks=chunks or None,
            blocks=blocks,
            metadata=metadata,
            session_status=session_status,
        )
        self.ended = True

    async def close(self) -> None:
        """Stop the background sender (no Slack call; a call in flight is cancelled)."""
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None
