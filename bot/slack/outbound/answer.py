"""A turn's one message while the loop runs: its tool calls and the answer as it comes.

Streaming (the default): tool calls show as Slack task cards inside the streamed message,
and the text streams below them (``stream.py``). Without streaming, or when Slack refuses
it: one message is posted and edited (tools as a context block, the answer in a
``markdown`` block). Either way the message carries a Stop button only where Slack's agent
session offers no stop of its own (``control.py`` beside a stream). In a channel the cards
show each call's name, state and duration, never its output (``blocks/tasks.py``); the
finished message offers the output to the clicker alone (``blocks/tool_output.py``).

While the loop runs, writing is best effort and never holds the loop. The strict end, which
makes the thread show the answer exactly, is ``finish.py``; what an earlier attempt left is
picked up by ``resume.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.agent.events import ToolFinished, ToolProgress, ToolStarted
from bot.agent.result import CallOutcome
from bot.config.schema import SlackConfig
from bot.slack.audience import read_by_requester_alone
from bot.slack.background import Background
from bot.slack.blocks.limits import STREAMED_TEXT_CHARS
from bot.slack.blocks.messages import turn_blocks, turn_text
from bot.slack.blocks.tasks import TaskState, ToolTask, task_chunk, with_output
from bot.slack.blocks.tool_output import OutputButton
from bot.slack.errors import error_code
from bot.slack.outbound.coalesced import CoalescedMessage, Content
from bot.slack.outbound.control import StopControl
from bot.slack.outbound.delivery import MessageState
from bot.slack.outbound.resume import EarlierAttempt
from bot.slack.outbound.status import TurnStatus
from bot.slack.outbound.stream import StreamWriter
from bot.slack.outbound.thread import TurnThread
from bot.state.redis.errors import REDIS_DOWN
from bot.turn.store.lease import Aborted

log = logging.getLogger(__name__)

# Text of a round is held back until it is clearly an answer, not a remark before tool calls.
START_AFTER_CHARS = 80


class AnswerWriter:
    def __init__(
        self,
        thread: TurnThread,
        status: TurnStatus,
        settings: SlackConfig,
        *,
        on_user_stop: Callable[[], Awaitable[None]],
        stop_value: str,
        feedback: dict[str, Any] | None,
    ) -> None:
        self.thread = thread
        self.status = status
        self.settings = settings
        self.on_user_stop = on_user_stop
        self.stop_value = stop_value
        self.feedback = feedback
        # Only the person who asked reads the thread (their DM): the tools' output may show.
        self.private = read_by_requester_alone(thread.turn.channel)
        record = thread.ledger.record
        self.tasks: dict[str, ToolTask] = {
            str(task["call_id"]): ToolTask.from_record(task) for task in record.tasks
        }
        # A resumed turn writes into what an earlier attempt left, not into a second stream.
        self.streaming = settings.streaming and record.message is MessageState.NONE
        self.stream: StreamWriter | None = None
        self.message: CoalescedMessage | None = None  # the turn's message, when not streamed
        self.control = StopControl(thread, interval_s=settings.edit_interval_s)
        self.earlier = EarlierAttempt(
            thread,
            tasks=self.tasks,
            adopt=lambda ts: self.turn_message().adopt(ts),
        )
        if record.ts:
            self.turn_message().adopt(record.ts)
        self.round = 0
        self.held = ""  # this round's text not yet shown
        self.round_text = ""  # this round's text shown (or queued in the stream)
        self.background = Background()
        self.session_ended = False  # the stream's end set the session back to "active"

    async def resume(self) -> None:
        """End a stream an earlier attempt left open; find a message it created but did not
        record. Best effort here; the finish does it for sure."""
        try:
            await self.earlier.tidy()
        except (asyncio.CancelledError, Aborted):
            raise
        except Exception as exc:
            log.info("could not tidy %s yet (%s)", self.thread.turn.channel, error_code(exc))

    # --- what the loop reports -----------------------------------------------------------

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
        task.progress, task.amount = event.text, event.amount
        self._task_changed(task)

    def tool_finished(self, event: ToolFinished) -> None:
        task = self.tasks.setdefault(event.call_id, ToolTask(event.call_id, event.name))
        task.duration_ms = event.duration_ms
        if event.outcome is CallOutcome.OK:
            task.state, task.detail = TaskState.DONE, event.preview
        elif event.outcome is CallOutcome.CANCELLED:
            task.state = TaskState.STOPPED
        elif event.outcome is CallOutcome.DEFERRED:
            task.state = TaskState.WAITING
        else:
            task.state, task.detail = TaskState.FAILED, event.preview
            task.error = event.error or ""
        self._task_changed(task)

    def show_working(self) -> None:
        """Nothing else shows that the bot works on it (no session, no assistant status):
        the Stop button's message says so while streaming, or the turn's message is posted
        with a placeholder."""
        if self.streaming:
            self.control.show(self.stop_value)
        else:
            self._render()

    # --- where it is shown ---------------------------------------------------------------

    def _show(self, piece: str) -> None:
        if len(self.round_text) + len(piece) > STREAMED_TEXT_CHARS:
            return  # the final split takes over from here
        self.round_text += piece
        stream = self._stream()
        if stream is not None:
            stream.text(piece)
        else:
            self._render()

    def _task_changed(self, task: ToolTask) -> None:
        # In the record before any call shows it: the save before that call carries it.
        self.thread.ledger.record.tasks = [t.to_record() for t in self.tasks.values()]
        stream = self._stream()
        if stream is not None:
            stream.task(task_chunk(task, private=self.private))
        else:
            self._render()
        self.background.spawn(self._save_tasks_now())

    def _stream(self) -> StreamWriter | None:
        """The stream, while streaming works; None once the turn's message is posted."""
        if not self.streaming:
            return None
        if self.stream is None:
            self.stream = StreamWriter(
                self.thread,
                task_display=self.settings.task_display,
                buffer_chars=self.settings.stream_buffer_chars,
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
            self.turn_message().adopt(stream.ts)
        if stream is not None and stream.user_stopped:
            return
        self._render()

    def _render(self) -> None:
        if self.thread.ledger.record.stopped:
            return
        # Rendered when the edit goes out (at most once per edit interval), not for every
        # piece of text: Block Kit built per piece held the event loop for 0.5 s on one
        # 11,000-character answer read at once.
        self.turn_message().set_rendered(self._shown_now)

    def _shown_now(self) -> Content:
        """The turn's message as it stands: its tasks and this round's text so far."""
        tasks = list(self.tasks.values())
        return (
            turn_text(tasks, self.round_text, False, private=self.private),
            turn_blocks(
                tasks,
                self.round_text,
                finished=False,
                private=self.private,
                stop=self._custom_stop(),
            ),
        )

    def output_button(self, tasks: list[ToolTask] | None = None) -> OutputButton | None:
        """The "Show output" button for a finished message showing ``tasks`` (this
        segment's by default): where the cards do not show the output and some call has
        one."""
        shown = list(self.tasks.values()) if tasks is None else tasks
        if self.private or not with_output(shown):
            return None
        turn = self.thread.turn
        return OutputButton(turn.team, turn.channel, turn.thread_ts, self.thread.entry_id)

    def _custom_stop(self) -> str | None:
        """The Stop button's value where Slack's agent session has no stop of its own."""
        return None if self.status.sessions else self.stop_value

    async def _stop_control(self) -> None:
        await self.status.ready.wait()
        if self.streaming and not self.status.sessions:
            self.control.show(self.stop_value)

    async def save_tasks(self) -> None:
        self.thread.ledger.record.tasks = [task.to_record() for task in self.tasks.values()]
        with contextlib.suppress(Aborted):
            await self.thread.ledger.save_if_changed()

    async def _save_tasks_now(self) -> None:
        """Best effort, in the background: Redis away now, the next save (there is one
        before every call that shows the cards) carries them."""
        try:
            await self.save_tasks()
        except REDIS_DOWN as exc:
            log.info(
                "the task cards of turn %s wait for the next save (%s)", self.thread.entry_id, exc
            )

    def turn_message(self) -> CoalescedMessage:
        """The turn's message as a posted (and edited) one."""
        if self.message is None:
            self.message = CoalescedMessage(
                self.thread.client,
                self.thread.turn.channel,
                self.thread.turn.thread_ts,
                self.settings.edit_interval_s,
                guard=self.thread.ledger.valid,
                metadata=self.thread.tag(
                    "answer",
                    0,
                    segment=self.thread.ledger.record.segment,
                ),
                before_post=self._before_first_post,
                on_posted=self._first_posted,
            )
        return self.message

    def forget_message(self) -> None:
        """The turn's message is gone from Slack: a new one is posted."""
        self.message = None

    async def _before_first_post(self) -> str | None:
        """Before posting the turn's message: if a post or stream start of this turn has an
        unknown outcome, look for it first; else note that a post is going out."""
        record = self.thread.ledger.record
        if record.unknown:
            await self.earlier.find_first()
            if record.ts:
                if record.open_stream:
                    await self.earlier.end_stream(record.open_stream)
                return record.ts
        record.posting()
        await self.thread.ledger.save()
        return None

    async def _first_posted(self, ts: str) -> None:
        self.thread.ledger.record.created(ts, streaming=False)
        await self.thread.ledger.save()

    async def close(self) -> None:
        """Stop the background work (no Slack call)."""
        await self.background.close()
        if self.stream is not None:
            await self.stream.close()
        if self.message is not None:
            await self.message.close()
        await self.control.message.close()
