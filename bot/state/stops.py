"""Stop requests (the Stop button), seen by whichever process runs the thread's turn."""

from __future__ import annotations

import time

from bot.state.connection import Redis
from bot.state.keys import Keys
from bot.turn import ThreadKey

KEEP_S = 600


class StopRequests:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def request(self, thread: ThreadKey, by: str) -> None:
        """Ask the thread's running turn to stop. Stored with the time, so a request made
        before a turn started never stops it."""
        await self.client.set(self.keys.stop(thread), f"{time.time()} {by}", ex=KEEP_S)

    async def requested_since(self, since: dict[ThreadKey, float]) -> list[ThreadKey]:
        """Which threads were asked to stop after the given times (one round trip)."""
        if not since:
            return []
        threads = list(since)
        values = await self.client.mget([self.keys.stop(t) for t in threads])
        return [
            thread
            for thread, value in zip(threads, values, strict=True)
            if value and float(str(value).split(" ", 1)[0]) >= since[thread]
        ]
