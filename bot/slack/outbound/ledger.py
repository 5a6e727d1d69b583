"""The delivery record of one turn, in memory, written through the owner's fence.

Several tasks of a turn's view save the record (the stream, the Stop button's message,
task cards). Saves go out one at a time and each writes the record as it is when its turn
comes, so an older picture can never land after a newer one: a "posting" mark saved before
a Slack call is never undone by a slower save that started earlier.
"""

from __future__ import annotations

import asyncio

from bot.slack.outbound.delivery import SlackDelivery
from bot.turn.responder import Fence


class DeliveryLedger:
    def __init__(self, record: SlackDelivery, fence: Fence) -> None:
        self.record = record
        self.fence = fence
        self._saving = asyncio.Lock()

    def valid(self) -> bool:
        """Whether this owner may still write to Slack."""
        return self.fence.valid()

    async def save(self) -> None:
        """Store the record as it is now (raises Aborted when the owner lost its lease)."""
        async with self._saving:
            await self.fence.save_delivery(self.record.to_record())
