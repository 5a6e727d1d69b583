"""Threads the bot takes part in, so follow-ups there need no new mention."""

from __future__ import annotations

from bot.state.connection import Redis
from bot.state.keys import Keys
from bot.turn.model import ThreadKey


class ThreadParticipation:
    def __init__(self, client: Redis, keys: Keys, ttl_s: int) -> None:
        self.client = client
        self.keys = keys
        self.ttl_s = ttl_s

    async def join(self, thread: ThreadKey) -> bool:
        """Note that the bot is in ``thread``; True when it was not before (a new thread)."""
        key = self.keys.participation(thread)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.set(key, "1", nx=True, ex=self.ttl_s)
            pipe.expire(key, self.ttl_s)
            first, _ = await pipe.execute()
        return bool(first)

    async def joined(self, thread: ThreadKey) -> bool:
        return bool(await self.client.exists(self.keys.participation(thread)))
