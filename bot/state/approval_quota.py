"""How many approval requests each person's turns have waiting for a decision, so that no
one opens more than ``approval.max_open_per_person`` at once (across threads and replicas).

One sorted set per person (in the team's shard): the ids of their undecided requests, each
scored by its deadline. A request takes its place in one Lua step that first lets go of those
past their deadline, then counts, and adds it only while there is room, so two replicas
opening at once cannot both take the last place. A decided request leaves the set when the
set is next found full (:meth:`ApprovalQuota.release`, told which are no longer open: their
records live in their threads' shards, which one step here cannot read); one past its
deadline leaves it at any look. So the count is of requests still open, and a place is never
held past its request's deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys

KEEP_AFTER_S = 3600  # the set outlives its latest deadline by this much

# KEYS: the person's open requests; ARGV: request id, its deadline, now, the most, TTL
# Returns {1, open} when the request holds a place (now or already), {0, open} when full.
TAKE = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return {1, redis.call('ZCARD', KEYS[1])}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local open = redis.call('ZCARD', KEYS[1])
if open >= tonumber(ARGV[4]) then return {0, open} end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if redis.call('TTL', KEYS[1]) < tonumber(ARGV[5]) then
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
return {1, open + 1}
"""


@dataclass(frozen=True)
class Place:
    """The answer to a request asking for a place: whether it holds one, and how many of
    the person's requests are open with it (or, refused, without it)."""

    taken: bool
    open: int


class ApprovalQuota:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._take = client.register_script(TAKE)

    async def take(
        self, team: str, user: str, request_id: str, deadline: float, most: int
    ) -> Place:
        """A place for ``request_id`` among the person's open requests, unless ``most`` of
        them are open already (a request that holds one keeps it)."""
        now = time.time()
        ttl = max(int(deadline - now), 0) + KEEP_AFTER_S
        taken, count = await self._take(
            keys=[self.keys.open_approvals(team, user)],
            args=[request_id, repr(deadline), repr(now), most, ttl],
        )
        return Place(bool(int(taken)), int(count))

    async def holders(self, team: str, user: str) -> list[str]:
        """The requests that hold a place (some may have been decided since)."""
        found = await self.client.zrange(self.keys.open_approvals(team, user), 0, -1)
        return [str(request_id) for request_id in found]

    async def release(self, team: str, user: str, request_ids: Iterable[str]) -> None:
        """Let go of the places of requests no longer open."""
        ids = list(request_ids)
        if ids:
            await self.client.zrem(self.keys.open_approvals(team, user), *ids)
