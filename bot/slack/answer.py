"""Writing the answer into the thread: streamed while the model writes it, split into
several messages when it is long, and posted plainly when streaming is off or fails.

Streaming uses ``chat.startStream`` / ``appendStream`` / ``stopStream`` through slack_sdk's
``chat_stream`` helper (which buffers appends). A background task feeds it, so the agent
loop never waits on Slack. When streaming is unavailable, or the stream expired
(``message_not_in_streaming_state``), the text goes into an ordinary message that is posted
and then edited at most once per interval. At the end, the answer is split at paragraph or
code-fence boundaries and the first part replaces what was streamed; the rest follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks import answer_blocks
from bot.slack.calls import safe_call
from bot.slack.coalesced import CoalescedMessage
from bot.slack.text.split import split_markdown
from bot.turn import Turn

log = logging.getLogger(__name__)

# Text of a round is held back until it is clearly an answer, not a remark before tool calls.
START_AFTER_CHARS = 80
STREAM_LIMIT = 10_000  # past this, the rest waits for the final split


class AnswerWriter:
    def __init__(
        self,
        client: AsyncWebClient,
        turn: Turn,
        *,
        streaming: bool,
        buffer_chars: int,
        interval_s: float,
    ) -> None:
        self.client = client
        self.turn = turn
        self.streaming = streaming
        self.buffer_chars = buffer_chars
        self.interval_s = interval_s
        self.round = 0
        self.held = ""  # this round's text not yet shown
        self.shown = ""  # text already sent to the current answer message
        self.stream: AsyncChatStream | None = None
        self.fallback: CoalescedMessage | None = None
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None

    # --- while the turn runs -----------------------------------------------------------

    def text(self, round_number: int, piece: str) -> None:
        if round_number != self.round:
            self.round, self.held = round_number, ""
        self.held += piece
        if self.shown or len(self.held) >= START_AFTER_CHARS or "\n\n" in self.held:
            self._show(self.held)
            self.held = ""

    def tools_called(self, round_number: int) -> str:
        """The round turned out to call tools: its held text was a remark, returned for the
        progress message. A round already being shown ends its message as it is."""
        remark = self.held if round_number == self.round else ""
        self.held = ""
        if self.shown:
            asyncio.create_task(self._close_current())  # noqa: RUF006
        return remark

    def _show(self, piece: str) -> None:
        if len(self.shown) + len(piece) > STREAM_LIMIT:
            return  # the final split takes over from here
        self.shown += piece
        if self.streaming and self.fallback is None:
            self._outbox.put_nowait(piece)
            if self._sender is None:
                self._sender = asyncio.create_task(self._send())
        else:
            self._fallback().set(self.shown, answer_blocks(self.shown))

    async def _send(self) -> None:
        while True:
            pieces = [await self._outbox.get()]
            while not self._outbox.empty():
                pieces.append(self._outbox.get_nowait())
            try:
                await self._append("".join(pieces))
            finally:
                for _ in pieces:
                    self._outbox.task_done()

    async def _append(self, piece: str) -> None:
        if self.fallback is not None:
            return
        try:
            if self.stream is None:
                self.stream = await self.client.chat_stream(
                    channel=self.turn.channel,
                    thread_ts=self.turn.thread_ts,
                    recipient_team_id=self.turn.team,
                    recipient_user_id=self.turn.user,
                    buffer_size=self.buffer_chars,
                )
            await self.stream.append(markdown_text=piece)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._stream_failed(exc)

    def _stream_failed(self, exc: Exception) -> None:
        error = _error_code(exc)
        log.info(
            "streaming stopped in %s (%s); posting and editing instead", self.turn.channel, error
        )
        message = self._fallback()
        if self.stream is not None and self.stream.ts:
            message.adopt(self.stream.ts)  # keep writing into the message we streamed to
        message.set(self.shown, answer_blocks(self.shown))

    def _fallback(self) -> CoalescedMessage:
        if self.fallback is None:
            self.fallback = CoalescedMessage(
                self.client, self.turn.channel, self.turn.thread_ts, self.interval_s
            )
        return self.fallback

    async def _drain(self) -> None:
        """Let everything queued reach Slack before the end."""
        if self._sender is None:
            return
        await self._outbox.join()
        self._sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sender
        self._sender = None

    async def _close_current(self) -> None:
        """End the message being written (a remark streamed before tool calls) as it is."""
        await self._drain()
        if self.stream is not None and self.fallback is None:
            await self._stop_stream()
        elif self.fallback is not None:
            await self.fallback.flush()
        self.stream, self.fallback, self.shown = None, None, ""

    async def _stop_stream(self, final: str | None = None) -> bool:
        assert self.stream is not None
        try:
            await self.stream.stop(markdown_text=final or None)
            return True
        except Exception as exc:
            log.info("stopping the stream in %s failed (%s)", self.turn.channel, _error_code(exc))
            return False

    # --- the end -----------------------------------------------------------------------

    async def finish(self, answer: str) -> None:
        """Make the thread show ``answer`` exactly, in as many messages as it needs."""
        await self._drain()
        parts = split_markdown(answer)
        first, rest = parts[0], parts[1:]
        if self.stream is not None and self.fallback is None:
            tail = first[len(self.shown) :] if first.startswith(self.shown) else None
            if await self._stop_stream(tail) and tail is not None:
                await self._post(rest)
                return
            # The stream expired, or holds more than the first part: replace its text.
            if self.stream.ts:
                self._fallback().adopt(self.stream.ts)
        if self.fallback is not None:
            self.fallback.set(first, answer_blocks(first))
            await self.fallback.flush()
            await self._post(rest)
            return
        await self._post(parts)

    async def _post(self, parts: list[str]) -> None:
        for part in parts:
            await post_markdown(self.client, self.turn.channel, self.turn.thread_ts, part)


async def post_answer(client: AsyncWebClient, turn: Turn, text: str) -> None:
    """Post a whole answer in the turn's thread, split into as many messages as it needs."""
    for part in split_markdown(text):
        await post_markdown(client, turn.channel, turn.thread_ts, part)


async def post_markdown(client: AsyncWebClient, channel: str, thread_ts: str, text: str) -> Any:
    return await safe_call(
        client.chat_postMessage,
        channel=channel,
        thread_ts=thread_ts,
        text=text,
        blocks=answer_blocks(text),
    )


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if response is not None:
        with contextlib.suppress(Exception):
            return str(response.get("error"))
    return type(exc).__name__
