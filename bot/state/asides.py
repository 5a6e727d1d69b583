"""Replies in a thread the bot takes part in that it hears but does not answer (people
talking to each other), kept so the next turn in the thread gives them to the model.

Each reply is stored scored by its Slack ts. A turn takes the replies written between the
previous turn's message and its own; which window it took is remembered with the turn's
message ts, so a turn that is run again after a crash takes the same window again.
"""

from __future__ import annotations

from bot.state.connection import Redis
from bot.state.keys import Keys
from bot.turn import ThreadKey

MAX_KEPT = 100  # per thread; the oldest go first


class ThreadAsides:
    def __init__(self, client: Redis, keys: Keys, ttl_s: int, max_kept: int = MAX_KEPT) -> None:
        self.client = client
        self.keys = keys
        self.ttl_s = ttl_s
        self.max_kept = max_kept

    async def add(self, thread: ThreadKey, ts: str, message: str) -> None:
        key = self.keys.asides(thread)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zadd(key, {message: float(ts)})
            pipe.zremrangebyrank(key, 0, -(self.max_kept + 1))
            pipe.expire(key, self.ttl_s)
            await pipe.execute()

    async def take(self, thread: ThreadKey, ts: str) -> list[str]:
        """The replies heard before ``ts`` and after the previous turn's message, oldest
        first (the same list again for the same ``ts``)."""
        key, taken_key = self.keys.asides(thread), self.keys.asides_taken(thread)
        taken = await self.client.hgetall(taken_key)
        if taken.get("turn") == ts:
            since = taken.get("since") or "-inf"
        else:
            since = taken.get("until") or "-inf"
        low = since if since == "-inf" else f"({since}"
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrangebyscore(key, low, f"({ts}")
            pipe.hset(taken_key, mapping={"turn": ts, "since": since, "until": ts})
            pipe.expire(taken_key, self.ttl_s)
            if since != "-inf":
                pipe.zremrangebyscore(key, "-inf", since)  # taken by a turn before
            found, *_ = await pipe.execute()
        return [str(item) for item in found]
