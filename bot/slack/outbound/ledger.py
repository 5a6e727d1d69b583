"""The delivery record of one turn, in memory, written through the owner's fence."""

from __future__ import annotations

from bot.slack.outbound.delivery import SlackDelivery
from bot.turn.responder import Fence


class DeliveryLedger:
    def __init__(self, record: SlackDelivery, fence: Fence) -> None:
        self.record = record
        self.fence = fence

    def valid(self) -> bool:
        """Whether this owner may still write to Slack."""
        return self.fence.valid()

    async def save(self) -> None:
        """Store the record now (raises Aborted when the owner lost its lease)."""
        await self.fence.save_delivery(self.record.to_record())
