"""Picking up what an earlier attempt at a turn left in its thread.

A creation whose ts was never learnt (a crash, a timeout, a 5xx after Slack applied it) is
looked for by its tag, or, for a stream (which cannot be tagged when it starts), as the
bot's untagged message after the person's; a stream left open is ended with every task
card brought to its last known state; one the person stopped is left alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

from bot.slack.audience import read_by_requester_alone
from bot.slack.blocks.tasks import TaskState, ToolTask, task_chunk
from bot.slack.errors import STOPPED_BY_USER, error_code, is_temporary
from bot.slack.outbound.tagging import first_message
from bot.slack.outbound.thread import TurnThread
from bot.turn.store.lease import Aborted

log = logging.getLogger(__name__)


class EarlierAttempt:
    def __init__(
        self,
        thread: TurnThread,
        *,
        tasks: dict[str, ToolTask],
        adopt: Callable[[str], None],
    ) -> None:
        self.thread = thread
        self.tasks = tasks  # the turn's task cards, shared with its writer
        self.adopt = adopt  # the turn's message is this ts from now on

    async def tidy(self) -> None:
        """Find the turn's message if its creation had an unknown outcome; end its stream if
        it may still be open (unless the person stopped it). Raises what Slack refused for
        now (the caller tries again)."""
        record = self.thread.ledger.record
        if record.unknown:
            await self.find_first()
        if record.open_stream:
            if await self.thread.was_stopped(record.open_stream):
                record.user_stopped()
                await self.thread.ledger.save()
                return
            await self.end_stream(record.open_stream)

    async def find_first(self) -> None:
        """The turn's message was being created with an unknown outcome: find it."""
        found = await self.thread.find_own()
        record = self.thread.ledger.record
        first = first_message(found, self.thread.turn.message_ts, record.segment, record.after)
        record.found(first.ts, streaming=first.streaming)
        if first.ts:
            log.info(
                "found the turn's message an earlier post left in %s", self.thread.turn.channel
            )
            self.adopt(first.ts)
        await self.thread.ledger.save()

    async def end_stream(self, ts: str) -> None:
        """End a stream left open (tagged, so it is never taken for another turn's), with
        every task card it shows brought to its last known state (one cut off shows as
        stopped: no card stays "running"); a stream that is over already is fine, one the
        person stopped is left alone."""
        if not self.thread.ledger.valid():
            raise Aborted("the turn's lease is gone")
        private = read_by_requester_alone(self.thread.turn.channel)
        cards = []
        for task in self.tasks.values():
            shown = replace(task, state=TaskState.STOPPED) if task.open else task
            cards.append(task_chunk(shown, private=private))
        record = self.thread.ledger.record
        try:
            await self.thread.client.chat_stopStream(
                channel=self.thread.turn.channel,
                ts=ts,
                chunks=cards or None,
                metadata=self.thread.tag(
                    "answer",
                    0,
                    segment=record.segment,
                ),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if error_code(exc) in STOPPED_BY_USER or await self.thread.was_stopped(ts):
                record.user_stopped()
            elif is_temporary(exc):
                raise
        record.stream_over()
        await self.thread.ledger.save()
