"""The delivery record: saved through the owner's fence, one save at a time, each with the
record as it is when its turn comes."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.slack.outbound.delivery import SlackDelivery
from bot.slack.outbound.ledger import DeliveryLedger


class SlowFence:
    """Each save takes the next delay from ``delays``; keeps what Redis would hold last."""

    def __init__(self, *delays: float) -> None:
        self.delays = list(delays)
        self.stored: dict[str, Any] = {}
        self.started = asyncio.Event()

    def valid(self) -> bool:
        return True

    async def save_delivery(self, record: dict[str, Any]) -> None:
        self.started.set()
        await asyncio.sleep(self.delays.pop(0) if self.delays else 0.0)
        self.stored = dict(record)


async def test_a_slow_older_save_never_lands_over_a_newer_one() -> None:
    # The Stop button's message marks itself as posting; its save is slow (a new Redis
    # connection). Meanwhile the stream marks its start as posting and starts: if the older
    # picture landed last, the stream's start would be forgotten and never found again.
    fence = SlowFence(0.2, 0.0)
    ledger = DeliveryLedger(SlackDelivery(), fence)
    ledger.record.control_posting = True
    control = asyncio.create_task(ledger.save())
    await fence.started.wait()
    ledger.record.first_posting = True
    await ledger.save()
    await control
    assert fence.stored["first_posting"] is True
    assert fence.stored["control_posting"] is True
