"""Short-lived answers about people (their roles, a user group's members) in Redis."""

from __future__ import annotations

from bot.state.connection import Redis
from bot.state.keys import Keys


class RedisCache:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def get(self, key: str) -> str | None:
        value = await self.client.get(self.keys.cache(key))
        return str(value) if value is not None else None

    async def set(self, key: str, value: str, ttl_s: int) -> None:
        await self.client.set(self.keys.cache(key), value, ex=ttl_s)

    async def delete(self, key: str) -> None:
        await self.client.delete(self.keys.cache(key))
