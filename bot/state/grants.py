"""Roles granted to people by admins in Slack, with who granted them and when."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from bot.state.connection import Redis
from bot.state.keys import Keys


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

    async def grant(self, team: str, user: str, role: str, by: str) -> Grant:
        grant = Grant(user, role, by, time.time())
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self.keys.grants(team, user), role, json.dumps({"by": by, "at": grant.at}))
            pipe.sadd(self.keys.granted_users(team), user)
            await pipe.execute()
        return grant

    async def revoke(self, team: str, user: str, role: str) -> bool:
        """Return False when the person did not hold that grant."""
        removed = await self.client.hdel(self.keys.grants(team, user), role)
        if not await self.client.hlen(self.keys.grants(team, user)):
            await self.client.srem(self.keys.granted_users(team), user)
        return bool(removed)

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
