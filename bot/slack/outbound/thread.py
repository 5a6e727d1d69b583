"""One turn's place in Slack, as every writer of the turn sees it (the view, the answer, the
stream, the Stop control, what an earlier attempt left, the approval cards)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.identity import WhoAmI
from bot.slack.outbound.ledger import DeliveryLedger
from bot.slack.outbound.tagging import OwnMessage, find_own, tag
from bot.turn.model import QueuedTurn, Turn
from bot.turn.ports import Fence
from bot.turn.store.stops import StopRequests

WasStopped = Callable[[str], Awaitable[bool]]  # did the person stop this stream (its ts)?


@dataclass(frozen=True)
class TurnThread:
    """What the writers of one turn share: the turn's client (every call within the
    owner's lease: bot/slack/client.py), the queued turn, its delivery ledger (saved through
    the owner's fence), who the bot is, and whether the person stopped a stream."""

    client: AsyncWebClient
    queued: QueuedTurn
    ledger: DeliveryLedger
    who_am_i: WhoAmI
    was_stopped: WasStopped

    @property
    def turn(self) -> Turn:
        return self.queued.turn

    @property
    def entry_id(self) -> str:
        return self.queued.entry_id

    def tag(
        self, kind: str, part: int | None = None, *, segment: int = 0, ref: str = ""
    ) -> dict[str, Any]:
        """The metadata that marks a message as this turn's ``kind`` (tagging.py)."""
        return tag(self.turn.message_ts, self.entry_id, kind, part, segment=segment, ref=ref)

    async def find_own(self) -> list[OwnMessage]:
        """The bot's messages in the thread after the person's (a repair: tagging.py)."""
        return await find_own(self.client, self.turn, self.who_am_i)


def stopped_streams(stops: StopRequests | None, fence: Fence, turn: Turn) -> WasStopped:
    """Asks Redis whether the person stopped one of the turn's streams (within the lease)."""

    async def was_stopped(ts: str) -> bool:
        if stops is None:
            return False
        async with fence.bounded("asking whether the stream was stopped"):
            return await stops.stream_stopped(turn.thread_key, ts)

    return was_stopped
