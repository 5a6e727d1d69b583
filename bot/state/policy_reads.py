"""What one policy question reads, in one round trip: the person's cached roles and the
tools switched off (permissions/policy.py ``Reads``). Nothing is kept between questions,
so a tool switched off or a role revoked stops the very next call."""

from __future__ import annotations

from bot.state.role_cache import RoleCache, cached
from bot.state.switches import ToolSwitches, switched_off
from permissions.lookups import Cached


class PolicyReads:
    """What :meth:`RoleCache.read` and :meth:`ToolSwitches.disabled` read, together."""

    def __init__(self, roles: RoleCache, switches: ToolSwitches) -> None:
        self.roles = roles
        self.switches = switches

    async def read(self, team: str, user: str, external: bool) -> tuple[Cached, set[str]]:
        # Not a transaction: the switches and a person's roles live in different slots of a
        # cluster, and neither read needs the other's moment. Two GETs (a cluster's pipeline
        # refuses MGET), the generation first: a grant or revoke landing between them drops
        # the answer, so the lookup that follows holds the old generation and its write is
        # refused (bot/state/role_cache.py).
        value, generation = self.roles.keys_of(team, user, external)
        async with self.roles.client.pipeline(transaction=False) as pipe:
            pipe.get(generation)
            pipe.get(value)
            pipe.hgetall(self.switches.keys.switches)
            generation_read, value_read, switches = await pipe.execute()
        return cached(value_read, generation_read), switched_off(switches)
