"""The delivery record of one turn, in memory, written through the owner's fence.

Several tasks of a turn's view save the record (the stream, the Stop button's message,
task cards). Saves go out one at a time and each writes the record as it is when its turn
comes, so an older picture can never land after a newer one: a "posting" mark saved before
a Slack call is never undone by a slower save that started earlier. What a Slack call is
about to show is put in the record first and saved before the call, so whoever resumes the
turn knows it (a task card left "running" in a stream could never be closed otherwise).
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.slack.outbound.delivery import SlackDelivery
from bot.turn.ports import Fence


class DeliveryLedger:
    def __init__(self, record: SlackDelivery, fence: Fence) -> None:
        self.record = record
        self.fence = fence
        self._saving = asyncio.Lock()
        self._saved: dict[str, Any] = record.to_record()  # as stored when the view began

    def valid(self) -> bool:
        """Whether this owner may still write to Slack."""
        return self.fence.valid()

    async def save(self) -> None:
        """Store the record as it is now (raises Aborted when the owner lost its lease)."""
        await self._save(always=True)

    async def save_if_changed(self) -> None:
        """Store the record unless it is stored as it is already."""
        await self._save(always=False)

    async def _save(self, *, always: bool) -> None:
        async with self._saving:
            now = self.record.to_record()
            if always or now != self._saved:
                await self.fence.save_delivery(now)
                self._saved = now
