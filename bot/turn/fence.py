"""Writes a turn's owner must make, whatever Redis does for a moment.

Redis being away (beyond redis-py's own retries) is waited out while the lease holds; a
lost lease or a shutdown ends the attempt with :class:`Aborted`, and the next owner
continues from what was saved. Each try is bounded by the lease (a Redis that hangs, its
packets silently dropped, is given up on at the lease's end, not after its socket
timeouts). Safe because every move and save is idempotent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bot.agent.cancellation import sleep_unless
from bot.state.redis.errors import REDIS_DOWN
from bot.turn.store.lease import Aborted, ThreadLease
from bot.turn.store.records import OwnedTurn

log = logging.getLogger(__name__)

REDIS_RETRY_START_S = 0.2
REDIS_RETRY_MAX_S = 2.0
T = TypeVar("T")


class Durably:
    """Runs one write until it is made, or the attempt is over."""

    def __init__(
        self, entry_id: str, lease: ThreadLease, handing_back: asyncio.Event | None
    ) -> None:
        self.entry_id = entry_id
        self.lease = lease
        self.handing_back = handing_back

    async def __call__(self, write: Callable[[], Awaitable[T]]) -> T:
        delay = REDIS_RETRY_START_S
        while True:
            try:
                async with self.lease.bounded(f"a write of turn {self.entry_id}"):
                    return await write()
            except REDIS_DOWN as exc:
                if not self.lease.valid():
                    raise Aborted(f"turn {self.entry_id}: Redis away, lease gone") from exc
                log.warning("Redis failed on turn %s (%s); trying again", self.entry_id, exc)
                if not await sleep_unless(delay, self.lease.lost, self.handing_back):
                    raise Aborted(f"turn {self.entry_id} interrupted") from exc
                delay = min(delay * 2, REDIS_RETRY_MAX_S)


class DurableJournal:
    """The turn's journal for the loop (bot/agent/journal.py): each save is made durably.

    The person's message, first in an empty journal, is held back and saved with the next
    message: a turn that answers at once never needs it (settling stores the turn whole),
    and one that is taken over before anything else was saved starts afresh, as it would
    with only that message saved. One round trip fewer per turn."""

    def __init__(self, owned: OwnedTurn, durably: Durably) -> None:
        self.owned = owned
        self.durably = durably
        self._held: list[dict[str, Any]] = []

    async def record(self, message: dict[str, Any]) -> None:
        if not self._held and self.owned.journaled == 0 and message.get("role") == "user":
            self._held.append(message)
            return
        messages = [*self._held, message]
        await self.durably(lambda: self.owned.record(*messages))
        self._held = []

    async def claim_rerun(self, call_id: str) -> bool:
        return await self.durably(lambda: self.owned.claim_rerun(call_id))
