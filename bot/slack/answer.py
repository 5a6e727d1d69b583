"""Writing the answer into the thread: streamed while the model writes it, split into
several messages when it is long, posted and edited when streaming is off or fails, and
finished exactly once even when an earlier attempt died half-way.

While the loop runs, writing is best effort: a background task feeds slack_sdk's
``chat_stream`` (buffered appends), so the loop never waits on Slack; when streaming is
unavailable or the stream ends early, the text goes into an ordinary message edited at most
once per interval. :meth:`AnswerWriter.finish` is strict: it makes the thread show the
answer exactly, in as many parts as it needs, and raises what failed so delivery can retry.

Every message it creates is recorded in the delivery record before ("posting") and after
(its ts), and tagged. A post whose outcome was never learnt (a crash, a timeout, a 5xx after
Slack applied it) is looked for by its tag before anything is posted again; a stream, which
cannot be tagged when it starts, is taken to be the bot's untagged message after the
person's. A resumed attempt continues from the record: it ends a stream left open, writes
the first part into the message already there, and posts only the missing parts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from bot.lifecycle.responder import Aborted
from bot.slack.blocks import answer_blocks, message_text
from bot.slack.coalesced import CoalescedMessage
from bot.slack.errors import MESSAGE_GONE, error_code, is_temporary
from bot.slack.ledger import DeliveryLedger
from bot.slack.tagging import Me, OwnMessage, find_own, tag
from bot.slack.text.split import split_markdown
from bot.turn import Turn

log = logging.getLogger(__name__)

# Text of a round is held back until it is clearly an answer, not a remark before tool calls.
START_AFTER_CHARS = 80
STREAM_LIMIT = 10_000  # past this, the rest waits for the final split
DRAIN_INTERVALS = 10  # at the end, queued stream text may take this many edit intervals

WhoAmI = Callable[[], Awaitable[Me]]


class AnswerWriter:
    def __init__(
        self,
        client: AsyncWebClient,
        turn: Turn,
        entry_id: str,
        ledger: DeliveryLedger,
        who_am_i: WhoAmI,
        *,
        streaming: bool,
        buffer_chars: int,
        interval_s: float,
    ) -> None:
        self.client = client
        self.turn = turn
        self.entry_id = entry_id
        self.ledger = ledger
        self.who_am_i = who_am_i
        self.buffer_chars = buffer_chars
        self.interval_s = interval_s
        record = ledger.record
        # A resumed turn writes into what an earlier attempt left, not into a second stream.
        self.streaming = streaming and not record.first_ts and not record.first_posting
        self.round = 0
        self.held = ""  # this round's text not yet shown
        self.shown = ""  # text meant for the current answer message
        self.appended = ""  # of that, what the stream took (handed to chat_stream)
        self.stream: AsyncChatStream | None = None
        self.first: CoalescedMessage | None = None  # the first part's message when not streaming
        if record.first_ts:
            self._first_message().adopt(record.first_ts)
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None

    # --- picking up an earlier attempt -----------------------------------------------------

    async def resume(self) -> None:
        """End a stream an earlier attempt left open, and find a first message it created but
        did not record. Best effort here; :meth:`finish` does it for sure."""
        record = self.ledger.record
        try:
            if record.first_posting and not record.first_ts:
                await self._find_first()
            if record.first_ts and record.first_streaming:
                await self._end_stream(record.first_ts)
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            log.info("could not tidy %s yet (%s)", self.turn.channel, error_code(exc))

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
        if self.shown and (self._closing is None or self._closing.done()):
            self._closing = asyncio.create_task(self._close_current())
        return remark

    def _show(self, piece: str) -> None:
        if len(self.shown) + len(piece) > STREAM_LIMIT:
            return  # the final split takes over from here
        self.shown += piece
        if self.streaming:
            self._outbox.put_nowait(piece)
            if self._sender is None:
                self._sender = asyncio.create_task(self._send())
        else:
            self._first_message().set(message_text(self.shown), answer_blocks(self.shown))

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
        if not self.streaming:
            return
        record = self.ledger.record
        try:
            if not self.ledger.valid():
                raise Aborted("the turn's lease is gone")
            if self.stream is None:
                record.first_posting = True
                await self.ledger.save()
                self.stream = await self.client.chat_stream(
                    channel=self.turn.channel,
                    thread_ts=self.turn.thread_ts,
                    recipient_team_id=self.turn.team,
                    recipient_user_id=self.turn.user,
                    buffer_size=self.buffer_chars,
                )
            await self.stream.append(markdown_text=piece)
            self.appended += piece
            if self.stream.ts and record.first_ts != self.stream.ts:
                record.first_ts, record.first_streaming = self.stream.ts, True
                record.first_posting = False
                await self.ledger.save()
        except asyncio.CancelledError:
            raise
        except Aborted:
            self.streaming = False
        except Exception as exc:
            self._stream_failed(exc)

    def _stream_failed(self, exc: Exception) -> None:
        log.info(
            "streaming stopped in %s (%s); posting and editing instead",
            self.turn.channel,
            error_code(exc),
        )
        self.streaming = False
        message = self._first_message()
        if self.stream is not None and self.stream.ts:
            message.adopt(self.stream.ts)  # keep writing into the message we streamed to
        message.set(message_text(self.shown), answer_blocks(self.shown))

    def _first_message(self) -> CoalescedMessage:
        if self.first is None:
            self.first = CoalescedMessage(
                self.client,
                self.turn.channel,
                self.turn.thread_ts,
                self.interval_s,
                guard=self.ledger.valid,
                metadata=tag(self.turn.message_ts, self.entry_id, "answer", 0),
                before_post=self._before_first_post,
                on_posted=self._first_posted,
            )
        return self.first

    async def _before_first_post(self) -> str | None:
        """Before posting the first part's message: if a post or stream start of this turn
        has an unknown outcome, look for it first; else note that a post is going out."""
        record = self.ledger.record
        if record.first_posting and not record.first_ts:
            await self._find_first()
            if record.first_ts:
                if record.first_streaming:
                    await self._end_stream(record.first_ts)
                return record.first_ts
        record.first_posting = True
        await self.ledger.save()
        return None

    async def _first_posted(self, ts: str) -> None:
        record = self.ledger.record
        record.first_ts, record.first_posting, record.first_streaming = ts, False, False
        await self.ledger.save()

    async def _drain(self) -> bool:
        """Let a remark's closing and the queued stream text reach Slack; False when the
        text could not in time (the stream then holds less than was meant for it)."""
        if self._closing is not None:
            with contextlib.suppress(Exception):
                await self._closing
        return await self._drain_sender()

    async def _drain_sender(self) -> bool:
        if self._sender is None:
            return True
        drained = True
        try:
            await asyncio.wait_for(self._outbox.join(), self.interval_s * DRAIN_INTERVALS)
        except TimeoutError:
            drained = False
        self._sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sender
        self._sender = None
        return drained and self.appended == self.shown

    async def _close_current(self) -> None:
        """End the message being written (a remark streamed before tool calls) as it is.
        A posted message is reused for the answer, which replaces its text."""
        if not await self._drain_sender():
            self._abandon_stream()
        elif self.stream is not None and self.streaming and self.stream.ts:
            try:
                if not self.ledger.valid():
                    return
                await self.stream.stop(metadata=tag(self.turn.message_ts, self.entry_id, "remark"))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._stream_failed(exc)  # the answer will be written into it instead
            else:
                record = self.ledger.record
                record.first_ts, record.first_streaming, record.first_posting = "", False, False
                with contextlib.suppress(Aborted):
                    await self.ledger.save()
        self.stream, self.shown, self.appended = None, "", ""

    def _abandon_stream(self) -> None:
        """The stream did not take everything meant for it: stop feeding it; the end writes
        the whole part into its message instead (or looks for it, if its ts is unknown)."""
        self.streaming = False
        record = self.ledger.record
        if self.stream is not None and self.stream.ts:
            record.first_ts, record.first_streaming = self.stream.ts, True
            record.first_posting = False

    async def close(self) -> None:
        """Stop the background work (no Slack call)."""
        for task in (self._sender, self._closing):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._sender = self._closing = None
        if self.first is not None:
            await self.first.close()

    # --- the end -----------------------------------------------------------------------

    async def finish(self, answer: str) -> None:
        """Make the thread show ``answer`` exactly, in as many messages as it needs. Raises
        what failed (the caller sorts it); calling it again continues where it stopped."""
        if not await self._drain():
            self._abandon_stream()
        record = self.ledger.record
        parts = split_markdown(answer)
        if not record.part_ts(0):
            ts = await self._finish_first(parts[0])
            record.parts["0"], record.first_ts, record.first_streaming = ts, ts, False
            await self.ledger.save()
        for number in range(1, len(parts)):
            if not record.part_ts(number):
                await self._post_part(number, parts[number])

    async def _finish_first(self, text: str) -> str:
        record = self.ledger.record
        stream = self.stream
        if stream is not None and self.streaming:
            # This attempt's own stream, which took everything meant for it: end it with the
            # rest of the first part.
            self.streaming = False
            tail = text[len(self.appended) :] if text.startswith(self.appended) else None
            if tail is not None:
                self._guard()
                try:
                    await stream.stop(
                        markdown_text=tail or None,
                        metadata=tag(self.turn.message_ts, self.entry_id, "answer", 0),
                    )
                    return str(stream.ts)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if stream.ts:
                        record.first_ts, record.first_streaming = stream.ts, True
                        record.first_posting = False
                        await self.ledger.save()
                    if is_temporary(exc):
                        raise
            elif stream.ts:
                record.first_ts, record.first_streaming = stream.ts, True
            # The stream ended early or holds more than the first part: replace its text.
        if self.first is not None:
            await self.first.settle()  # a post in flight: its ts is recorded once it is done
        if record.first_posting and not record.first_ts:
            await self._find_first()
        if record.first_ts and record.first_streaming:
            await self._end_stream(record.first_ts)
        message = self._first_message()
        if record.first_ts and message.ts is None:
            message.adopt(record.first_ts)
        try:
            await message.write_now(message_text(text), answer_blocks(text))
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            if message.ts is None or error_code(exc) not in MESSAGE_GONE:
                raise
            log.info("the answer's message in %s is gone; posting it again", self.turn.channel)
            record.first_ts, self.first = "", None
            message = self._first_message()
            await message.write_now(message_text(text), answer_blocks(text))
        assert message.ts is not None
        return message.ts

    async def _end_stream(self, ts: str) -> None:
        """End a stream left open (tagged, so it is never taken for another turn's); a stream
        that is over already is fine."""
        self._guard()
        try:
            await self.client.chat_stopStream(
                channel=self.turn.channel,
                ts=ts,
                metadata=tag(self.turn.message_ts, self.entry_id, "answer", 0),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_temporary(exc):
                raise
        record = self.ledger.record
        record.first_streaming = False
        await self.ledger.save()

    async def _find_first(self) -> None:
        """A first message was being created with an unknown outcome: find it (tagged, or
        the bot's untagged stream after the person's message)."""
        found = await self._own_messages()
        ts = next((m.ts for m in found if m.is_for(self.turn.message_ts, "answer", 0)), "")
        streaming = False
        if not ts:
            untagged = [m.ts for m in found if m.payload is None]
            ts, streaming = (untagged[0], True) if untagged else ("", False)
        record = self.ledger.record
        record.first_ts, record.first_streaming, record.first_posting = ts, streaming, False
        if ts:
            log.info("found the answer message an earlier post left in %s", self.turn.channel)
            self._first_message().adopt(ts)
        await self.ledger.save()

    async def _post_part(self, number: int, text: str) -> None:
        record = self.ledger.record
        if record.posting_part == number:
            found = await self._own_messages()
            ts = next((m.ts for m in found if m.is_for(self.turn.message_ts, "answer", number)), "")
            if ts:
                record.parts[str(number)], record.posting_part = ts, -1
                await self.ledger.save()
                return
        record.posting_part = number
        await self.ledger.save()
        self._guard()
        response = await self.client.chat_postMessage(
            channel=self.turn.channel,
            thread_ts=self.turn.thread_ts,
            text=message_text(text),
            blocks=answer_blocks(text),
            metadata=tag(self.turn.message_ts, self.entry_id, "answer", number),
        )
        record.parts[str(number)], record.posting_part = str(response["ts"]), -1
        await self.ledger.save()

    async def _own_messages(self) -> list[OwnMessage]:
        return await find_own(self.client, self.turn, self.who_am_i)

    def _guard(self) -> None:
        if not self.ledger.valid():
            raise Aborted("the turn's lease is gone")
