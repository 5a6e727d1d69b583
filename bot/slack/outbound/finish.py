"""The strict end of a turn's message: the thread shows the settled answer exactly.

A long answer is split into parts (``split.py``); the first is the turn's message, the
others follow, the last with the feedback buttons. The end raises what failed so delivery
can retry, and continues from the delivery record when called again, or by another worker
after a crash: it ends a stream left open, writes into the message already there, posts
only missing parts, and looks for a post whose outcome was never learnt (by its tag) before
posting again. A stream the person stopped in Slack is left as it is. In a channel, the
finished message offers the tools' output to the clicker alone ("Show output"). The
answer's last part says what the turn saved to memory (a line a note). Each time a
message is closed, the messages the turn set aside while calls waited for approval are
brought up to date (``aside.py``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import Block

from bot.agent.result import StopReason
from bot.channels.remember import saved_notes
from bot.slack.blocks.memory import memory_block
from bot.slack.blocks.messages import (
    answer_blocks,
    feedback_buttons,
    message_text,
    turn_blocks,
    turn_text,
)
from bot.slack.blocks.split import split_markdown
from bot.slack.blocks.tasks import settle_task
from bot.slack.blocks.tool_output import show_output_button
from bot.slack.errors import MESSAGE_GONE, STOPPED_BY_USER, error_code, is_temporary
from bot.slack.outbound.answer import AnswerWriter
from bot.slack.outbound.aside import bring_up_to_date, shown_aside
from bot.slack.outbound.delivery import MessageState
from bot.slack.outbound.stream import StreamWriter
from bot.turn.ports import Settled
from bot.turn.store.lease import Aborted

log = logging.getLogger(__name__)

SETTLE_S = 10.0  # at the end, how long a stream call in flight may take before giving up on it
FEEDBACK_TOOLS = 20  # tool names carried by the feedback buttons, at most


async def finish(writer: AnswerWriter, settled: Settled) -> None:
    """Make the thread show the settled text exactly, in as many messages as it needs.
    Raises what failed (the caller sorts it); calling it again continues."""
    await writer.background.settle()
    results = settled.tool_results()
    for task in writer.tasks.values():
        if task.open:
            settle_task(task, results.get(task.call_id))
    await writer.save_tasks()
    record = writer.thread.ledger.record
    parts = split_markdown(settled.text)
    ending = _Ending(
        _feedback(writer, settled),
        memory_block(saved_notes(settled.messages), writer.settings.command),
    )
    if not record.part_ts(0):
        last = len(parts) == 1
        ts = await _finish_first(writer, parts[0], settled, ending if last else _Ending())
        record.finished(ts)
        await writer.thread.ledger.save()
    for number in range(1, len(parts)):
        if not record.part_ts(number):
            last = number == len(parts) - 1
            await _post_part(writer, number, parts[number], ending if last else _Ending())
    await bring_up_to_date(writer, results)
    await writer.control.close()
    if not writer.session_ended:
        await writer.status.end()


async def set_aside(writer: AnswerWriter) -> None:
    """The turn parks (calls wait for a person): what its message shows so far (the task
    cards, the round's remark) is closed where it is, its stream ended, and the Stop
    button's message goes; the answer goes on in a new message once someone decided."""
    await writer.background.settle()
    await writer.save_tasks()
    record = writer.thread.ledger.record
    if record.message is not MessageState.NONE or writer.stream or writer.message:
        text = writer.round_text
        await _finish_first(writer, text, Settled(text, StopReason.PARKED), _Ending())
    await bring_up_to_date(writer, {})  # calls that waited before, and ran in this segment
    await writer.control.close()
    record.set_aside(shown_aside(writer))
    await writer.thread.ledger.save()
    if not writer.session_ended:
        await writer.status.end()


@dataclass(frozen=True)
class _Ending:
    """What the answer's last part carries below its text: the feedback buttons' values and
    the lines saying what the turn saved to memory (neither on the other parts)."""

    feedback: dict[str, Any] | None = None
    saved: Block | None = None


def _feedback(writer: AnswerWriter, settled: Settled) -> dict[str, Any] | None:
    """What the feedback buttons carry: the turn, the model, the tools used."""
    if writer.feedback is None or not settled.reason.answered:
        return None
    tools = list(dict.fromkeys(task.name for task in writer.tasks.values()))[:FEEDBACK_TOOLS]
    return {**writer.feedback, "t": writer.thread.entry_id, "k": tools}


async def _finish_first(writer: AnswerWriter, text: str, settled: Settled, ending: _Ending) -> str:
    """The turn's message shows the answer's first part; returns its ts."""
    record = writer.thread.ledger.record
    stream = writer.stream
    if stream is not None:
        # A call in flight decides whether the stream exists: wait for it first.
        await stream.settle(SETTLE_S)
        if stream.ts and not stream.user_stopped and await writer.thread.was_stopped(stream.ts):
            record.user_stopped()
    if record.stopped or (stream is not None and stream.user_stopped):
        stopped = await _leave_as_stopped(writer)
        if stopped:
            return stopped
    if stream is not None and writer.streaming and stream.ts:
        ended = await _end_own_stream(writer, stream, text, settled, ending)
        if ended:
            return ended
    if writer.message is not None:
        # A background edit or post must not run beside what follows: looking for a post
        # with an unknown outcome while one is in flight would find nothing and forget it.
        await writer.message.quiet()
    await writer.earlier.tidy()
    if record.stopped:
        stopped = await _leave_as_stopped(writer)
        if stopped:
            return stopped
    tasks = list(writer.tasks.values())
    message = writer.turn_message()
    if record.ts and message.ts is None:
        message.adopt(record.ts)
    content = (
        turn_text(tasks, text, True, private=writer.private),
        turn_blocks(
            tasks,
            text,
            finished=True,
            private=writer.private,
            feedback=ending.feedback,
            output=writer.output_button(),
            saved=ending.saved,
        ),
    )
    try:
        await message.write_now(*content)
    except (asyncio.CancelledError, Aborted):
        raise
    except Exception as exc:
        if message.ts is None or error_code(exc) not in MESSAGE_GONE:
            raise
        log.info("the turn's message in %s is gone; posting it again", writer.thread.turn.channel)
        record.gone()
        writer.forget_message()
        message = writer.turn_message()
        await message.write_now(*content)
    assert message.ts is not None
    return message.ts


async def _end_own_stream(
    writer: AnswerWriter,
    stream: StreamWriter,
    text: str,
    settled: Settled,
    ending: _Ending,
) -> str:
    """End this attempt's stream with the rest of the answer; "" when it cannot be (the
    stream then becomes an ordinary message the answer is written into)."""
    record = writer.thread.ledger.record
    writer.streaming = False
    writable = await stream.settle(SETTLE_S) and stream.working
    if settled.reason is StopReason.CANCELLED:
        tail: str | None = f"\n\n_{settled.text}_"  # the note that it was stopped
    elif text.startswith(writer.round_text):
        tail = text[len(writer.round_text) :]
    else:
        tail = None  # the answer is not what streamed (a failure): write it whole
    if writable and tail is not None:
        output = writer.output_button()
        feedback = ending.feedback
        blocks = [
            *([show_output_button(output).to_dict()] if output else []),
            *([ending.saved.to_dict()] if ending.saved else []),
            *([feedback_buttons(feedback).to_dict()] if feedback else []),
        ]
        try:
            await stream.stop(
                tail,
                blocks=blocks or None,
                metadata=writer.thread.tag(
                    "answer",
                    0,
                    segment=record.segment,
                ),
                session_status="active" if writer.status.sessions else None,
            )
            writer.session_ended = writer.status.sessions
            return stream.ts
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if error_code(exc) in STOPPED_BY_USER or await writer.thread.was_stopped(stream.ts):
                record.user_stopped()
            elif is_temporary(exc):
                await writer.thread.ledger.save()
                raise
    await stream.close()
    await writer.thread.ledger.save()
    return ""


async def _leave_as_stopped(writer: AnswerWriter) -> str:
    """The person stopped the stream in Slack: it stays as it is ("" when there is no
    message to leave: the answer is posted after all)."""
    record = writer.thread.ledger.record
    if not record.user_stopped():
        return ""
    await writer.thread.ledger.save()
    return record.ts


async def _post_part(writer: AnswerWriter, number: int, text: str, ending: _Ending) -> None:
    """Post a later part of the answer, recorded before and after; a post of it whose
    outcome was never learnt is looked for by its tag first."""
    record, turn = writer.thread.ledger.record, writer.thread.turn
    if record.posting_part == number:
        found = await writer.thread.find_own()
        ts = next(
            (
                m.ts
                for m in found
                if m.is_for(turn.message_ts, "answer", number, segment=record.segment)
            ),
            "",
        )
        if ts:
            record.part_posted(number, ts)
            await writer.thread.ledger.save()
            return
    record.part_posting(number)
    await writer.thread.ledger.save()
    if not writer.thread.ledger.valid():
        raise Aborted("the turn's lease is gone")
    blocks = answer_blocks(text)
    if ending.saved is not None:
        blocks.append(ending.saved.to_dict())
    if ending.feedback is not None:
        blocks.append(feedback_buttons(ending.feedback).to_dict())
    response = await writer.thread.client.chat_postMessage(
        channel=turn.channel,
        thread_ts=turn.thread_ts,
        text=message_text(text),
        blocks=blocks,
        metadata=writer.thread.tag("answer", number, segment=record.segment),
    )
    record.part_posted(number, str(response["ts"]))
    await writer.thread.ledger.save()
