"""Messages a turn set aside when it parked, kept truthful: a call that waited for a
person's approval shows "waiting for approval" there, and once the turn has gone on and the
call ended (it ran, was denied, expired), that message's card shows how it ended.

When the turn parks, what its message shows (its text, its task cards) is kept in the
delivery record beside its ts, while a call on it waits (``SlackDelivery.aside``). Each time
the turn later closes a message (it parks again, or it finishes), every such message whose
waiting calls have ended since is rewritten once (``chat.update``) as a posted message with
the same text and the cards brought up to date, and forgotten when nothing on it waits any
more. A message the person stopped is never kept, so never written to again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from bot.slack.blocks.limits import MARKDOWN_PART_CHARS, shorten
from bot.slack.blocks.messages import turn_blocks, turn_text
from bot.slack.blocks.tasks import TaskState, ToolTask, catch_up
from bot.slack.errors import MESSAGE_GONE, error_code, is_temporary
from bot.slack.outbound.answer import AnswerWriter
from bot.turn.store.lease import Aborted

log = logging.getLogger(__name__)


def shown_aside(writer: AnswerWriter) -> dict[str, Any] | None:
    """What the turn's message shows as it is set aside, when a call on it waits (else None:
    nothing there will need to change). Call it once the message is closed."""
    record = writer.thread.ledger.record
    tasks = list(writer.tasks.values())
    if record.stopped or not any(task.state is TaskState.WAITING for task in tasks):
        return None
    stream = writer.stream
    # A stream ended as such shows all its text; else the message was written as a posted
    # one, with this round's text.
    text = stream.written if stream is not None and stream.ended else writer.round_text
    return {
        "text": shorten(text, MARKDOWN_PART_CHARS),
        "tasks": [task.to_record() for task in tasks],
        "segment": record.segment,
    }


async def bring_up_to_date(writer: AnswerWriter, results: Mapping[str, str]) -> None:
    """Every message set aside whose waiting calls have ended since (as this segment's cards
    show them, else ``results``: the turn's tool results by call id) shows how they ended.
    Raises what Slack refused for now (the caller tries again); a message gone, or refused
    for good, is left as it is."""
    record = writer.thread.ledger.record
    for ts, shown in list(record.aside.items()):
        tasks = [ToolTask.from_record(task) for task in shown.get("tasks") or ()]
        moved = catch_up(tasks, writer.tasks, results)
        if moved is None:
            continue
        await _rewrite(writer, ts, str(shown.get("text") or ""), moved, int(shown["segment"]))
        if any(task.state is TaskState.WAITING for task in moved):
            record.aside[ts] = {**shown, "tasks": [task.to_record() for task in moved]}
        else:
            del record.aside[ts]
        await writer.thread.ledger.save()


async def _rewrite(
    writer: AnswerWriter, ts: str, text: str, tasks: list[ToolTask], segment: int
) -> None:
    thread = writer.thread
    if not thread.ledger.valid():
        raise Aborted("the turn's lease is gone")
    private = writer.private
    try:
        await thread.client.chat_update(
            channel=thread.turn.channel,
            ts=ts,
            text=turn_text(tasks, text, True, private=private),
            blocks=turn_blocks(
                tasks, text, finished=True, private=private, output=writer.output_button(tasks)
            ),
            metadata=thread.tag("answer", 0, segment=segment),
        )
    except (asyncio.CancelledError, Aborted):
        raise
    except Exception as exc:
        if is_temporary(exc):
            raise
        gone = "is gone" if error_code(exc) in MESSAGE_GONE else "was refused"
        log.info(
            "the message %s set aside in %s %s (%s); its cards stay as they were",
            ts,
            thread.turn.channel,
            gone,
            error_code(exc),
        )
