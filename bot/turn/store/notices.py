"""Plain messages owed to people: "I could not answer this", posted as soon as Slack takes it.

A turn that is given up leaves a notice here in the same atomic step. Any worker posts due
notices: taking one pushes its due time forward (a lease), so two workers do not post it at
once, and a worker that dies while posting leaves it due again soon. Each take is counted:
a notice taken before may have been posted already, so its poster looks first.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bot.state.redis.commands import Commands
from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication

GIVE_UP_AFTER_S = 24 * 3600  # a notice Slack refused for a day is dropped (with an error log)

# KEYS: due set, data hash; ARGV: now, lease seconds, how many
TAKE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local taken = {}
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), id)
  local data = redis.call('HGET', KEYS[2], id)
  if data then
    local notice = cjson.decode(data)
    notice['taken'] = (tonumber(notice['taken']) or 0) + 1
    data = cjson.encode(notice)
    redis.call('HSET', KEYS[2], id, data)
    table.insert(taken, data)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return taken
"""


@dataclass(frozen=True)
class Notice:
    id: str  # the turn's entry id
    team: str
    channel: str
    thread_ts: str
    message_ts: str
    text: str  # "" when there is nothing to say, only things to tidy
    delivery: dict[str, Any] = field(default_factory=dict)  # what the turn left in Slack
    since: float = 0.0
    attempts: int = 0  # posts Slack refused
    taken: int = 0  # times a worker took it to post

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False)


class Notices:
    def __init__(self, client: Redis, keys: Keys, replication: Replication | None = None) -> None:
        self.client = client
        self.keys = keys
        # Taken (leased) on a replica before it is posted: a failover never posts it twice.
        self._take = (replication or Replication()).register(client, TAKE)

    def add_to(self, commands: Commands, notice: Notice) -> None:
        """Queue, on a turn's last move, a notice due now (in the turn's shard)."""
        stamped = replace(notice, since=notice.since or time.time())
        shard = self.keys.shards.of_id(notice.id)
        commands.hset(self.keys.notice_data(shard), {notice.id: stamped.to_json()})
        commands.zadd(self.keys.notices(shard), {notice.id: time.time()})

    async def take_due(self, lease_s: float, count: int = 10) -> list[Notice]:
        """Notices due now (up to ``count`` from each shard), each leased to the caller for
        ``lease_s``."""
        replies = await asyncio.gather(
            *(
                self._take(
                    keys=[self.keys.notices(shard), self.keys.notice_data(shard)],
                    args=[time.time(), lease_s, count],
                )
                for shard in self.keys.shards.all()
            )
        )
        return [_notice(item) for raw in replies for item in raw]

    def _keys(self, notice: Notice) -> tuple[str, str]:
        shard = self.keys.shards.of_id(notice.id)
        return self.keys.notices(shard), self.keys.notice_data(shard)

    async def done(self, notice: Notice) -> None:
        due, data = self._keys(notice)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrem(due, notice.id)
            pipe.hdel(data, notice.id)
            await pipe.execute()

    async def due_again(self, notice: Notice, delay_s: float) -> None:
        """Not posted this time, through nobody's fault (its thread is busy): due again
        after ``delay_s``, not after the whole lease."""
        due, _ = self._keys(notice)
        await self.client.zadd(due, {notice.id: time.time() + delay_s})

    async def retry_later(self, notice: Notice, delay_s: float) -> None:
        again = replace(notice, attempts=notice.attempts + 1)
        due, data = self._keys(notice)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(data, notice.id, again.to_json())
            pipe.zadd(due, {notice.id: time.time() + delay_s})
            await pipe.execute()

    async def pending(self) -> int:
        async with self.client.pipeline(transaction=False) as pipe:
            for shard in self.keys.shards.all():
                pipe.zcard(self.keys.notices(shard))
            return sum(int(n) for n in await pipe.execute())


def _notice(raw: str) -> Notice:
    data = json.loads(raw)
    if not isinstance(data.get("delivery"), dict):
        data["delivery"] = {}  # Lua's cjson writes an empty object as []
    return Notice(**data)
