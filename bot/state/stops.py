"""Stop requests (the Stop button), seen by whichever process runs the thread's turn."""

from __future__ import annotations

from bot.history.store import ThreadKey
from bot.state.connection import Redis
from bot.state.keys import Keys

KEEP_S = 600


class StopRequests:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def request(self, thread: ThreadKey, by: str) -> None:
        await self.client.set(self.keys.stop(thread), by, ex=KEEP_S)

    async def requested(self, thread: ThreadKey) -> bool:
        return bool(await self.client.exists(self.keys.stop(thread)))

    async def clear(self, thread: ThreadKey) -> None:
        await self.client.delete(self.keys.stop(thread))
