"""Threads the bot takes part in, so follow-ups there need no new mention."""

from __future__ import annotations

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.thread_key import ThreadKey


class ThreadParticipation:
    def __init__(self, client: Redis, keys: Keys, ttl_s: int) -> None:
        self.client = client
        self.keys = keys
        self.ttl_s = ttl_s

    async def joined(self, thread: ThreadKey) -> bool:
        return bool(await self.client.exists(self.keys.participation(thread)))
