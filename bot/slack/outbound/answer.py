"""A turn's one message: its tool calls and its answer.

Streaming (the default): tool calls show as Slack task cards inside the streamed message,
and the text streams below them (bot/slack/stream.py). Without streaming, or when Slack
refuses it: one message is posted and edited (tools as a context block, the answer in a
``markdown`` block). Either way the message carries a Stop button only where Slack's agent
session offers no stop of its own, and the answer's last part ends with the feedback
buttons. A long answer is split into parts; the first is the turn's message, the others
follow.

While the loop runs, writing is best effort and never holds the loop. :meth:`finish` is
strict: it makes the thread show the answer exactly, raises what failed so delivery can
retry, and continues from the delivery record when called again, or by another worker
after a crash: it ends a stream left open, writes into the message already there, posts
only missing parts, and looks for a post whose outcome was never learnt (by its tag)
before posting again. A stream the person stopped in Slack is never written to again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.events import ToolFinished, ToolProgress, ToolStarted
from bot.agent.result import CallOutcome, StopReason
from bot.config.schema import SlackConfig
from bot.slack.errors import MESSAGE_GONE, STOPPED_BY_USER, error_code, is_temporary
from bot.slack.outbound.background import Background
from bot.slack.outbound.blocks import (
    answer_blocks,
    feedback_buttons,
    message_text,
    turn_blocks,
    turn_text,
)
from bot.slack.outbound.coalesced import CoalescedMessage
from bot.slack.outbound.control import StopControl
from bot.slack.outbound.ledger import DeliveryLedger
from bot.slack.outbound.split import split_markdown
from bot.slack.outbound.status import TurnStatus
from bot.slack.outbound.stream import StreamWriter, WasStopped
from bot.slack.outbound.tagging import OwnMessage, WhoAmI, find_own, tag
from bot.slack.outbound.tasks import ToolTask, settle_task, task_chunk
from bot.turn.model import Turn
from bot.turn.responder import Aborted, Settled

log = logging.getLogger(__name__)

# Text of a round is held back until it is clearly an answer, not a remark before tool calls.
START_AFTER_CHARS = 80
STREAM_LIMIT = 10_000  # past this, the rest waits for the final split
SETTLE_S = 10.0  # at the end, how long a stream call in flight may take before giving up on it


class AnswerWriter:
    def __init__(
        self,
        client: AsyncWebClient,
        turn: Turn,
        entry_id: str,
        ledger: DeliveryLedger,
        who_am_i: WhoAmI,
        status: TurnStatus,
        settings: SlackConfig,
        *,
        was_stopped: WasStopped,
        on_user_stop: Callable[[], Awaitable[None]],
        stop_value: str,
        feedback: dict[str, Any] | None,
    ) -> None:
        self.client = client
        self.turn = turn
        self.entry_id = entry_id
        self.ledger = ledger
        self.who_am_i = who_am_i
        self.status = status
        self.settings = settings
        self.was_stopped = was_stopped
        self.on_user_stop = on_user_stop
        self.stop_value = stop_value
        self.feedback = feedback
        record = ledger.record
        self.tasks: dict[str, ToolTask] = {
            str(task["call_id"]): ToolTask(**task) for task in record.tasks
        }
        # A resumed turn writes into what an earlier attempt left, not into a second stream.
        self.streaming = settings.streaming and not record.first_ts and not record.first_posting
        self.stream: StreamWriter | None = None
        self.message: CoalescedMessage | None = None  # the turn's message, when not streamed
        self.control = StopControl(
            client, turn, entry_id, ledger, who_am_i, interval_s=settings.edit_interval_s
        )
        if record.first_ts:
            self._message().adopt(record.first_ts)
        self.round = 0
        self.held = ""  # this round's text not yet shown
        self.round_text = ""  # this round's text shown (or queued in the stream)
        self.background = Background()
        self._saved_tasks = list(record.tasks)
        self._session_ended = False  # the stream's end set the session back to "active"

    # --- picking up an earlier attempt -----------------------------------------------------

    async def resume(self) -> None:
        """End a stream an earlier attempt left open; find a message it created but did not
        record. Best effort here; :meth:`finish` does it for sure."""
        try:
            await self._tidy_first()
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            log.info("could not tidy %s yet (%s)", self.turn.channel, error_code(exc))

    async def _tidy_first(self) -> None:
        record = self.ledger.record
        if record.first_posting and not record.first_ts:
            await self._find_first()
        if record.first_ts and record.first_streaming and not record.stopped_by_user:
            if await self.was_stopped(record.first_ts):
                record.stopped_by_user = True
                await self.ledger.save()
                return
            await self._end_stream(record.first_ts)

    # --- while the turn runs -----------------------------------------------------------

    def text(self, round_number: int, piece: str) -> None:
        if round_number != self.round:
            self.round, self.held, self.round_text = round_number, "", ""
        self.held += piece
        if self.round_text or len(self.held) >= START_AFTER_CHARS or "\n\n" in self.held:
            self._show(self.held)
            self.held = ""

    def tool_started(self, event: ToolStarted) -> None:
        """The round turned out to call tools: its text was a remark before them."""
        if event.round == self.round and self.held:
            self._show(self.held)
        stream = self._stream()
        if stream is not None and self.round_text:
            stream.text("\n\n")
        self.held, self.round_text = "", ""
        self.tasks[event.call_id] = ToolTask(event.call_id, event.name)
        self._task_changed(self.tasks[event.call_id])
        self.background.spawn(self.status.working_on(event.name))
        if self.streaming:
            self.background.spawn(self._stop_control())

    def tool_progress(self, event: ToolProgress) -> None:
        """A running tool's own report of how far it is, shown on its task."""
        task = self.tasks.get(event.call_id)
        if task is None or not task.open or task.progress == event.text:
            return
        task.progress = event.text
        self._task_changed(task)

    def tool_finished(self, event: ToolFinished) -> None:
        task = self.tasks.setdefault(event.call_id, ToolTask(event.call_id, event.name))
        task.duration_ms = event.duration_ms
        if event.ok:
            task.state, task.detail = "done", event.preview
        elif event.outcome is CallOutcome.CANCELLED:
            task.state = "stopped"
        else:
            task.state, task.detail = "failed", event.preview
        self._task_changed(task)

    def _show(self, piece: str) -> None:
        if len(self.round_text) + len(piece) > STREAM_LIMIT:
            return  # the final split takes over from here
        self.round_text += piece
        stream = self._stream()
        if stream is not None:
            stream.text(piece)
        else:
            self._render()

    def _task_changed(self, task: ToolTask) -> None:
        stream = self._stream()
        if stream is not None:
            stream.task(task_chunk(task))
        else:
            self._render()
        self.background.spawn(self._save_tasks())

    def _stream(self) -> StreamWriter | None:
        """The stream, while streaming works; None once the turn's message is posted."""
        if not self.streaming:
            return None
        if self.stream is None:
            self.stream = StreamWriter(
                self.client,
                self.turn,
                self.ledger,
                task_display=self.settings.task_display,
                buffer_chars=self.settings.stream_buffer_chars,
                was_stopped=self.was_stopped,
                on_user_stop=self.on_user_stop,
            )
        if self.stream.working:
            return self.stream
        self._leave_stream()
        return None

    def _leave_stream(self) -> None:
        """Streaming failed (or ended early): the turn's message is written as a posted
        message from now on, in the stream's message if it was started."""
        self.streaming = False
        stream = self.stream
        if stream is not None and stream.ts:
            self._message().adopt(stream.ts)
            record = self.ledger.record
            record.first_ts, record.first_streaming = stream.ts, True
        if stream is not None and stream.user_stopped:
            return
        self._render()

    def _render(self) -> None:
        if self.ledger.record.stopped_by_user:
            return
        tasks = list(self.tasks.values())
        self._message().set(
            turn_text(tasks, self.round_text, False),
            turn_blocks(tasks, self.round_text, finished=False, stop=self._custom_stop()),
        )

    def _custom_stop(self) -> str | None:
        """The Stop button's value where Slack's agent session has no stop of its own."""
        return None if self.status.sessions else self.stop_value

    async def _stop_control(self) -> None:
        await self.status.ready.wait()
        if self.streaming and not self.status.sessions:
            self.control.show(self.stop_value)

    def show_working(self) -> None:
        """Nothing else shows that the bot works on it (no session, no assistant status):
        the Stop button's message says so while streaming, or the turn's message is posted
        with a placeholder."""
        if self.streaming:
            self.control.show(self.stop_value)
        else:
            self._render()

    async def _save_tasks(self) -> None:
        tasks = [vars(task).copy() for task in self.tasks.values()]
        if tasks != self._saved_tasks:
            self.ledger.record.tasks = tasks
            self._saved_tasks = tasks
            with contextlib.suppress(Aborted):
                await self.ledger.save()

    def _message(self) -> CoalescedMessage:
        if self.message is None:
            self.message = CoalescedMessage(
                self.client,
                self.turn.channel,
                self.turn.thread_ts,
                self.settings.edit_interval_s,
                guard=self.ledger.valid,
                metadata=tag(self.turn.message_ts, self.entry_id, "answer", 0),
                before_post=self._before_first_post,
                on_posted=self._first_posted,
            )
        return self.message

    async def _before_first_post(self) -> str | None:
        """Before posting the turn's message: if a post or stream start of this turn has an
        unknown outcome, look for it first; else note that a post is going out."""
        record = self.ledger.record
        if record.first_posting and not record.first_ts:
            await self._find_first()
            if record.first_ts:
                if record.first_streaming and not record.stopped_by_user:
                    await self._end_stream(record.first_ts)
                return record.first_ts
        record.first_posting = True
        await self.ledger.save()
        return None

    async def _first_posted(self, ts: str) -> None:
        record = self.ledger.record
        record.first_ts, record.first_posting, record.first_streaming = ts, False, False
        await self.ledger.save()

    async def close(self) -> None:
        """Stop the background work (no Slack call)."""
        await self.background.close()
        if self.stream is not None:
            await self.stream.close()
        if self.message is not None:
            await self.message.close()
        await self.control.message.close()

    # --- the end -----------------------------------------------------------------------

    async def finish(self, settled: Settled) -> None:
        """Make the thread show the settled text exactly, in as many messages as it needs.
        Raises what failed (the caller sorts it); calling it again continues."""
        await self.background.settle()
        results = settled.tool_results()
        for task in self.tasks.values():
            if task.open:
                settle_task(task, results.get(task.call_id))
        await self._save_tasks()
        record = self.ledger.record
        parts = split_markdown(settled.text)
        feedback = self._feedback(settled)
        if not record.part_ts(0):
            last = len(parts) == 1
            ts = await self._finish_first(parts[0], settled, feedback if last else None)
            record.parts["0"], record.first_ts, record.first_streaming = ts, ts, False
            await self.ledger.save()
        for number in range(1, len(parts)):
            if not record.part_ts(number):
                last = number == len(parts) - 1
                await self._post_part(number, parts[number], feedback if last else None)
        await self.control.close()
        if not self._session_ended:
            await self.status.end()

    def _feedback(self, settled: Settled) -> dict[str, Any] | None:
        """What the feedback buttons carry: the turn, the model, the tools used."""
        if self.feedback is None or not settled.reason.answered:
            return None
        tools = list(dict.fromkeys(task.name for task in self.tasks.values()))[:20]
        return {**self.feedback, "t": self.entry_id, "k": tools}

    async def _finish_first(
        self, text: str, settled: Settled, feedback: dict[str, Any] | None
    ) -> str:
        record = self.ledger.record
        stream = self.stream
        if stream is not None:
            # A call in flight decides whether the stream exists: wait for it first.
            await stream.settle(SETTLE_S)
            if stream.ts and not stream.user_stopped and await self.was_stopped(stream.ts):
                record.stopped_by_user = True
        user_stopped = record.stopped_by_user or (stream is not None and stream.user_stopped)
        if user_stopped and (stopped := await self._leave_as_stopped()):
            return stopped
        if stream is not None and self.streaming and stream.ts:
            ended = await self._end_own_stream(stream, text, settled, feedback)
            if ended:
                return ended
        await self._tidy_first()
        if record.stopped_by_user and (stopped := await self._leave_as_stopped()):
            return stopped
        tasks = list(self.tasks.values())
        message = self._message()
        if record.first_ts and message.ts is None:
            message.adopt(record.first_ts)
        content = (
            turn_text(tasks, text, True),
            turn_blocks(tasks, text, finished=True, feedback=feedback),
        )
        try:
            await message.write_now(*content)
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            if message.ts is None or error_code(exc) not in MESSAGE_GONE:
                raise
            log.info("the turn's message in %s is gone; posting it again", self.turn.channel)
            record.first_ts, self.message = "", None
            message = self._message()
            await message.write_now(*content)
        assert message.ts is not None
        return message.ts

    async def _end_own_stream(
        self, stream: StreamWriter, text: str, settled: Settled, feedback: dict[str, Any] | None
    ) -> str:
        """End this attempt's stream with the rest of the answer; "" when it cannot be (the
        stream then becomes an ordinary message the answer is written into)."""
        record = self.ledger.record
        self.streaming = False
        writable = await stream.settle(SETTLE_S) and stream.working
        if settled.reason is StopReason.CANCELLED:
            tail: str | None = f"\n\n_{settled.text}_"  # the note that it was stopped
        elif text.startswith(self.round_text):
            tail = text[len(self.round_text) :]
        else:
            tail = None  # the answer is not what streamed (a failure): write it whole
        if writable and tail is not None:
            try:
                await stream.stop(
                    tail,
                    blocks=[feedback_buttons(feedback).to_dict()] if feedback else None,
                    metadata=tag(self.turn.message_ts, self.entry_id, "answer", 0),
                    session_status="active" if self.status.sessions else None,
                )
                self._session_ended = self.status.sessions
                return stream.ts
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if error_code(exc) in STOPPED_BY_USER or await self.was_stopped(stream.ts):
                    record.stopped_by_user = True
                elif is_temporary(exc):
                    record.first_ts, record.first_streaming = stream.ts, True
                    record.first_posting = False
                    await self.ledger.save()
                    raise
        await stream.close()
        record.first_ts, record.first_streaming, record.first_posting = stream.ts, True, False
        await self.ledger.save()
        return ""

    async def _leave_as_stopped(self) -> str:
        """The person stopped the stream in Slack: it stays as it is ("" when there is no
        message to leave: the answer is posted after all)."""
        record = self.ledger.record
        record.stopped_by_user = True
        ts = record.first_ts or (self.stream.ts if self.stream is not None else "")
        if not ts:
            record.stopped_by_user = False
        await self.ledger.save()
        return ts

    async def _end_stream(self, ts: str) -> None:
        """End a stream left open (tagged, so it is never taken for another turn's), with
        every task card it shows brought to its last known state (one cut off shows as
        stopped: no card stays "running"); a stream that is over already is fine, one the
        person stopped is left alone."""
        self._guard()
        cards = []
        for task in self.tasks.values():
            shown = replace(task, state="stopped") if task.open else task
            cards.append(task_chunk(shown))
        try:
            await self.client.chat_stopStream(
                channel=self.turn.channel,
                ts=ts,
                chunks=cards or None,
                metadata=tag(self.turn.message_ts, self.entry_id, "answer", 0),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if error_code(exc) in STOPPED_BY_USER or await self.was_stopped(ts):
                self.ledger.record.stopped_by_user = True
            elif is_temporary(exc):
                raise
        record = self.ledger.record
        record.first_streaming = False
        await self.ledger.save()

    async def _find_first(self) -> None:
        """The turn's message was being created with an unknown outcome: find it (tagged,
        or the bot's untagged stream after the person's message)."""
        found = await self._own_messages()
        ts = next((m.ts for m in found if m.is_for(self.turn.message_ts, "answer", 0)), "")
        streaming = False
        if not ts:
            untagged = [m.ts for m in found if m.payload is None]
            ts, streaming = (untagged[0], True) if untagged else ("", False)
        record = self.ledger.record
        record.first_ts, record.first_streaming, record.first_posting = ts, streaming, False
        if ts:
            log.info("found the turn's message an earlier post left in %s", self.turn.channel)
            self._message().adopt(ts)
        await self.ledger.save()

    async def _post_part(self, number: int, text: str, feedback: dict[str, Any] | None) -> None:
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
        blocks = answer_blocks(text)
        if feedback is not None:
            blocks.append(feedback_buttons(feedback).to_dict())
        response = await self.client.chat_postMessage(
            channel=self.turn.channel,
            thread_ts=self.turn.thread_ts,
            text=message_text(text),
            blocks=blocks,
            metadata=tag(self.turn.message_ts, self.entry_id, "answer", number),
        )
        record.parts[str(number)], record.posting_part = str(response["ts"]), -1
        await self.ledger.save()

    async def _own_messages(self) -> list[OwnMessage]:
        return await find_own(self.client, self.turn, self.who_am_i)

    def _guard(self) -> None:
        if not self.ledger.valid():
            raise Aborted("the turn's lease is gone")
