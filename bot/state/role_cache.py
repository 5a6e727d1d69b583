"""Short-lived answers about people in Redis: their resolved roles (RoleCache, guarded by a
generation per person), and anything else by key (RedisCache: a user group's members)."""

from __future__ import annotations

from typing import Any

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from permissions.lookups import Cached

# How long a person's generation outlives its last change: far longer than any lookup, so
# the generation a lookup read is never lost (and taken for "0" again) before it writes.
GENERATION_TTL_S = 86_400

# KEYS: the cached roles, the person's generation; ARGV: value, ttl, generation read.
WRITE = """
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[3] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
"""


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


class RoleCache:
    """The resolver's cache (permissions/lookups.py ``Cache``): a write lands only while the
    person's generation is the one read before the lookup, checked in the same step."""

    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._write = client.register_script(WRITE)

    async def read(self, team: str, user: str, external: bool) -> Cached:
        value, generation = await self.client.mget(*self.keys_of(team, user, external))
        return cached(value, generation)

    def keys_of(self, team: str, user: str, external: bool) -> tuple[str, str]:
        """What :meth:`read` reads, in one slot: the cached answer, the generation."""
        return self.keys.roles(team, user, external), self.keys.roles_generation(team, user)

    async def write(
        self, team: str, user: str, external: bool, value: str, ttl_s: int, generation: str
    ) -> bool:
        keys = list(self.keys_of(team, user, external))
        return bool(await self._write(keys=keys, args=[value, ttl_s, generation]))

    async def forget(self, team: str, user: str) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            forgetting(pipe, self.keys, team, user)
            await pipe.execute()


def cached(value: str | None, generation: str | None) -> Cached:
    """What :meth:`RoleCache.keys_of` hold, as the resolver reads it."""
    return Cached(str(value) if value is not None else None, str(generation or "0"))


def forgetting(pipe: Any, keys: Keys, team: str, user: str) -> None:
    """Queue on ``pipe`` (a MULTI) what a change to a person's roles does with it: their
    generation moved on, their cached answers dropped."""
    generation = keys.roles_generation(team, user)
    pipe.incr(generation)
    pipe.expire(generation, GENERATION_TTL_S)
    pipe.delete(keys.roles(team, user, False), keys.roles(team, user, True))
