"""Roles granted to people by admins in Slack, with who granted them and when.

A grant or revoke moves the person's roles generation on and drops their cached roles in
the same step as the change (bot/state/role_cache.py), so a role lookup that read the grants
before it can never cache its answer after it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.role_cache import GENERATION_TTL_S, forgetting

# KEYS: the person's grants, the team's granted users, their roles generation, their two
# cached answers; ARGV: role, user, generation ttl. Returns 1 when the grant was there.
REVOKE = """
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[2])
end
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('DEL', KEYS[4], KEYS[5])
return removed
"""


@dataclass(frozen=True)
class Grant:
    user: str
    role: str
    by: str
    at: float


class RoleGrants:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._revoke = client.register_script(REVOKE)

    async def grant(self, team: str, user: str, role: str, by: str) -> Grant:
        grant = Grant(user, role, by, time.time())
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self.keys.grants(team, user), role, json.dumps({"by": by, "at": grant.at}))
            pipe.sadd(self.keys.granted_users(team), user)
            forgetting(pipe, self.keys, team, user)
            await pipe.execute()
        return grant

    async def revoke(self, team: str, user: str, role: str) -> bool:
        """Return False when the person did not hold that grant."""
        keys = [
            self.keys.grants(team, user),
            self.keys.granted_users(team),
            self.keys.roles_generation(team, user),
            self.keys.roles(team, user, False),
            self.keys.roles(team, user, True),
        ]
        return bool(await self._revoke(keys=keys, args=[role, user, GENERATION_TTL_S]))

    async def of(self, team: str, user: str) -> list[Grant]:
        raw = await self.client.hgetall(self.keys.grants(team, user))
        return [
            Grant(user, role, data["by"], data["at"])
            for role, data in ((role, json.loads(value)) for role, value in sorted(raw.items()))
        ]

    async def all(self, team: str) -> list[Grant]:
        users = sorted(await self.client.smembers(self.keys.granted_users(team)))
        grants: list[Grant] = []
        for user in users:
            grants.extend(await self.of(team, user))
        return grants
