"""Replies in a thread the bot takes part in that it hears but does not answer (people
talking to each other), kept so the next turn in the thread gives them to the model.

Each reply is stored scored by its Slack ts. A turn takes the replies written between the
previous turn's message and its own; which window it took is remembered with the turn's
message ts, so a turn that is run again after a crash takes the same window again.
"""

from __future__ import annotations

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.thread_key import ThreadKey

MAX_KEPT = 100  # per thread; the oldest go first

# KEYS: the replies (ZSET by ts), what was taken (HASH turn/since/until); ARGV: the turn's
# message ts, TTL. The window is (since, ts): since is where the previous turn stopped, or,
# for the same turn again, the since it used. Replies before since were taken already.
TAKE = """
local taken = redis.call('HMGET', KEYS[2], 'turn', 'since', 'until')
local since = taken[3] or '-inf'
if taken[1] == ARGV[1] then since = taken[2] or '-inf' end
local low = since
if since ~= '-inf' then
  low = '(' .. since
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', since)
end
local found = redis.call('ZRANGEBYSCORE', KEYS[1], low, '(' .. ARGV[1])
redis.call('HSET', KEYS[2], 'turn', ARGV[1], 'since', since, 'until', ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return found
"""


class ThreadAsides:
    def __init__(self, client: Redis, keys: Keys, ttl_s: int, max_kept: int = MAX_KEPT) -> None:
        self.client = client
        self.keys = keys
        self.ttl_s = ttl_s
        self.max_kept = max_kept
        self._take = client.register_script(TAKE)

    async def add(self, thread: ThreadKey, ts: str, message: str) -> None:
        key = self.keys.asides(thread)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zadd(key, {message: float(ts)})
            pipe.zremrangebyrank(key, 0, -(self.max_kept + 1))
            pipe.expire(key, self.ttl_s)
            await pipe.execute()

    async def take(self, thread: ThreadKey, ts: str) -> list[str]:
        """The replies heard before ``ts`` and after the previous turn's message, oldest
        first (the same list again for the same ``ts``). One atomic step."""
        keys = [self.keys.asides(thread), self.keys.asides_taken(thread)]
        found = await self._take(keys=keys, args=[ts, self.ttl_s])
        return [str(item) for item in found]
