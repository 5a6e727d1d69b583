"""The Stop button's own small message, for a streamed answer where the workspace has no
agent sessions (and so no stop button of Slack's): a stream cannot lose a button once it is
in it, so the button lives beside it and goes when the turn is over."""

from __future__ import annotations

from bot.slack.blocks.messages import WORKING, control_blocks
from bot.slack.outbound.coalesced import CoalescedMessage
from bot.slack.outbound.delivery import ControlState
from bot.slack.outbound.thread import TurnThread


class StopControl:
    def __init__(self, thread: TurnThread, *, interval_s: float) -> None:
        self.thread = thread
        turn, ledger = thread.turn, thread.ledger
        self.message = CoalescedMessage(
            thread.client,
            turn.channel,
            turn.thread_ts,
            interval_s,
            guard=ledger.valid,
            metadata=thread.tag("control", segment=ledger.record.segment),
            before_post=self._before_post,
            on_posted=self._posted,
        )
        if ledger.record.control_ts:
            self.message.adopt(ledger.record.control_ts)

    def show(self, stop_value: str) -> None:
        self.message.set(WORKING, control_blocks(stop_value))

    async def close(self) -> None:
        """The turn is over: the message goes (strict; a message already gone is fine)."""
        record = self.thread.ledger.record
        if record.control in (ControlState.NONE, ControlState.CLOSED):
            await self.message.close()
            return
        await self.message.settle()
        await self._find_posted()
        await self.message.delete_now()
        record.control_closed()
        await self.thread.ledger.save()

    async def _before_post(self) -> str | None:
        record = self.thread.ledger.record
        if record.control is ControlState.POSTING:
            await self._find_posted()
            if record.control_ts:  # found: it was posted after all
                return record.control_ts
        record.control_posting()
        await self.thread.ledger.save()
        return None

    async def _posted(self, ts: str) -> None:
        self.thread.ledger.record.control_shown(ts)
        await self.thread.ledger.save()

    async def _find_posted(self) -> None:
        """A post of this message had an unknown outcome: find it by its tag."""
        record = self.thread.ledger.record
        if record.control is not ControlState.POSTING:
            return
        found = await self.thread.find_own()
        segment = record.segment
        ts = next(
            (
                m.ts
                for m in found
                if m.is_for(self.thread.turn.message_ts, "control", segment=segment)
            ),
            "",
        )
        if ts:
            self.message.adopt(ts)
            await self._posted(ts)
            return
        record.control_not_found()
        await self.thread.ledger.save()
