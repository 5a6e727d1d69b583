"""The turn queue: a Redis Stream with a consumer group, plus an ordered set per thread.

Enqueueing is one atomic script: drop duplicates (the event id, and channel + message ts,
so a message's ``message`` and ``app_mention`` events count once), add the turn to the
stream, and add its entry id to its thread's set, scored by the Slack message ts. The thread
set is what runs a thread's turns one at a time in the order people wrote them, whichever
worker read them and however late Slack redelivered one; the stream is what gets a turn to
a worker, to another worker when its owner stops heart-beating, and acknowledged only when
it is finished.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import Any

import redis.exceptions
from redis.asyncio.cluster import RedisCluster

from bot.state.redis.commands import Commands
from bot.state.redis.connection import Redis
from bot.state.redis.errors import guarded
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication
from bot.state.redis.script_batch import ScriptBatch
from bot.state.redis.thread_key import ThreadKey
from bot.turn.model import Entry, QueuedTurn, Turn, Unreadable
from bot.turn.store.shard_readers import ShardReaders

log = logging.getLogger(__name__)

# KEYS: seen-event, seen-message, stream, thread queue[, the thread's joined mark]
# ARGV: dedup ttl, turn json, stream max length, check event (1/0), check message (1/0),
#       the message's order in its thread (its ts), what names the shard in an entry's id
#       ('' with one shard), the joined mark's ttl ('' for none)
# With the joined mark (a mention), the bot joins the thread first, duplicate or not, and the
# entry's 'new_thread' field says whether it was new there; the reply is {id, new}, or
# {false, new} for a duplicate. Without it: the id, or false. The id names the shard.
ENQUEUE = """
local new = nil
if KEYS[5] then
  new = redis.call('SET', KEYS[5], '1', 'NX', 'EX', ARGV[8]) and '1' or '0'
  redis.call('EXPIRE', KEYS[5], ARGV[8])
end
for i = 1, 2 do
  if ARGV[3 + i] == '1' and redis.call('EXISTS', KEYS[i]) == 1 then
    if new then return {false, new} end
    return false
  end
end
local id
if new then
  id = redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[3], '*', 'turn', ARGV[2], 'new_thread', new)
else
  id = redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[3], '*', 'turn', ARGV[2])
end
id = ARGV[7] .. id
for i = 1, 2 do
  if ARGV[3 + i] == '1' then
    redis.call('SET', KEYS[i], id, 'EX', ARGV[1])
  end
end
redis.call('ZADD', KEYS[4], ARGV[6], id)
if new then return {id, new} end
return id
"""

# KEYS: thread queue, thread's current; ARGV: entry id
FORGET = """
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
"""

# The head of a thread's queue: the started turn (and its state), else the pending one
# written first; false when there is none. Part of the lease's scripts (lease.py), which look
# at the queue in the same step as they take or let go of the thread.
HEAD_FUNCTION = """
local function head(current_key, queue_key, records_prefix)
  local current = redis.call('GET', current_key)
  if current then
    return {current, redis.call('HGET', records_prefix .. current, 'state') or ''}
  end
  local first = redis.call('ZRANGE', queue_key, 0, 0)
  if first[1] then return {first[1], ''} end
  return false
end
"""


@dataclass(frozen=True)
class QueueLook:
    """The keys a look at a thread's queue reads: its current pointer, its queue, and the
    prefix of the turn records (for the started turn's state)."""

    current: str
    queue: str
    records: str


Head = tuple[str, str]  # the entry id of the turn to work on next, and its record's state


class TurnQueue:
    """The turn streams (one per shard: :mod:`bot.state.redis.shards`) and the threads' queues.

    An entry's id names its shard (``<shard>/<stream id>``; bare with one shard)."""

    def __init__(
        self,
        client: Redis,
        keys: Keys,
        *,
        dedup_ttl_s: int,
        max_len: int,
        replication: Replication | None = None,
    ) -> None:
        self.client = client
        self.keys = keys
        self.shards = keys.shards
        self.dedup_ttl_s = dedup_ttl_s
        self.max_len = max_len
        # A burst's enqueues go to a single Redis together (bot/state/redis/script_batch.py).
        # An event is acknowledged once its entry and dedup records are on a replica.
        self._enqueue = ScriptBatch(
            client.register_script(ENQUEUE),
            batched=not isinstance(client, RedisCluster),
            replication=replication,
        )
        self._forget = client.register_script(FORGET)
        # Wakes in-process workers at once (the embedded Redis cannot block on reads).
        self.arrived = asyncio.Event()
        self._readers: dict[str, ShardReaders] = {}  # by consumer (several shards only)

    async def enqueue(self, turn: Turn, *, join_ttl_s: int | None = None) -> str | None:
        """Put ``turn`` on the queue; return its entry id, or None for a duplicate.

        ``join_ttl_s`` (a mention): in the same step, the bot joins the turn's thread for
        that long (bot/turn/store/participation.py), duplicate or not, and the turn is marked as
        the first of the bot's in that thread when it had not joined before.

        Raises :class:`StateUnavailable` when Redis cannot be reached: nothing was queued.
        """
        thread = turn.thread_key
        shard = self.shards.of(thread)
        keys = [
            self.keys.seen_event(thread, turn.team, turn.event_id),
            self.keys.seen_message(thread, turn.team, turn.channel, turn.message_ts),
            self.keys.turns(shard),
            self.keys.thread_queue(thread),
        ]
        args: list[str | int | float] = [
            self.dedup_ttl_s,
            turn.to_json(),
            self.max_len,
            "1" if turn.event_id else "0",
            "1" if turn.message_ts else "0",
            repr(turn.order),
            self.shards.qualify(shard, ""),
            "" if join_ttl_s is None else join_ttl_s,
        ]
        if join_ttl_s is not None:
            keys.append(self.keys.participation(thread))
        reply = await guarded(self._enqueue(keys, args))
        entry_id = reply[0] if isinstance(reply, list) else reply
        if entry_id:
            self.arrived.set()
        return str(entry_id) if entry_id else None

    async def ensure_group(self) -> None:
        """Every shard's stream and consumer group (created when missing)."""
        async with self.client.pipeline(transaction=False) as pipe:
            for shard in self.shards.all():
                pipe.xgroup_create(self.keys.turns(shard), self.keys.workers, id="0", mkstream=True)
            replies = await pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, BaseException) and "BUSYGROUP" not in str(reply):
                raise reply

    async def read(self, consumer: str, count: int, block_ms: int) -> list[Entry]:
        """New entries for this consumer, waiting up to ``block_ms`` (0: not at all).

        Recreates a group Redis lost (a restart without persistence). With several shards,
        a reader per shard waits on its stream (a cluster reads no streams across slots)
        until :meth:`stop_reading`."""
        if not self.shards.sharded:
            return await self.read_shard(0, consumer, count, block_ms)
        if block_ms <= 0:
            read = await asyncio.gather(
                *(self.read_shard(s, consumer, count, 0) for s in self.shards.all())
            )
            return [entry for entries in read for entry in entries]
        readers = self._readers.get(consumer)
        if readers is None:
            readers = self._readers[consumer] = ShardReaders(
                self.read_shard, list(self.shards.all()), consumer
            )
        return await readers.take(count, block_ms)

    async def read_shard(self, shard: int, consumer: str, count: int, block_ms: int) -> list[Entry]:
        """New entries of one shard's stream for this consumer."""
        reply = await self._unless_no_group(
            self.client.xreadgroup(
                self.keys.workers,
                consumer,
                {self.keys.turns(shard): ">"},
                count=count,
                block=block_ms if block_ms > 0 else None,  # BLOCK 0 would wait forever
            )
        )
        return [
            _entry(self.shards.qualify(shard, entry_id), fields)
            for _, items in reply or ()
            for entry_id, fields in items
        ]

    async def _unless_no_group(self, call: Awaitable[Any]) -> Any:
        """A read of the streams; None when the consumer group is gone (Redis lost its data):
        the group is made again and the next read finds the stream."""
        try:
            return await call
        except redis.exceptions.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            log.warning(
                "the turn queue's consumer group is gone (did Redis restart without its data?); "
                "recreating it"
            )
            await self.ensure_group()
            return None

    async def stop_reading(self) -> None:
        """Stop the shard readers (several shards only); what they read and nobody took is
        left pending, for another worker to claim once idle."""
        readers, self._readers = list(self._readers.values()), {}
        for one in readers:
            await one.stop()

    async def claim_stale(self, consumer: str, min_idle_ms: int, count: int = 50) -> list[Entry]:
        """Entries other consumers left pending longer than ``min_idle_ms`` (XAUTOCLAIM), up
        to ``count`` from each shard."""
        claimed = await asyncio.gather(
            *(self._claim_shard(s, consumer, min_idle_ms, count) for s in self.shards.all())
        )
        return [entry for entries in claimed for entry in entries]

    async def _claim_shard(
        self, shard: int, consumer: str, min_idle_ms: int, count: int
    ) -> list[Entry]:
        reply = await self._unless_no_group(
            self.client.xautoclaim(
                self.keys.turns(shard), self.keys.workers, consumer, min_idle_ms, "0-0", count=count
            )
        )
        if not reply:
            return []
        return [
            _entry(self.shards.qualify(shard, entry_id), fields)
            for entry_id, fields in reply[1]
            if fields
        ]

    async def head(self, thread: ThreadKey) -> str | None:
        """The entry id of the thread's turn to work on next: the one already started, else
        the pending one written first."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(self.keys.thread_current(thread))
            pipe.zrange(self.keys.thread_queue(thread), 0, 0)
            current, first = await pipe.execute()
        if current:
            return str(current)
        return str(first[0]) if first else None

    def look(self, thread: ThreadKey) -> QueueLook:
        """What a lease reads to look at ``thread``'s queue (lease.py)."""
        return QueueLook(
            self.keys.thread_current(thread),
            self.keys.thread_queue(thread),
            self.keys.turn_prefix(self.shards.of(thread)),
        )

    def stream_of(self, entry_id: str) -> str:
        """The stream that holds the entry."""
        return self.keys.turns(self.shards.of_id(entry_id))

    async def fetch(self, entry_id: str) -> Entry | None:
        """The entry, or None when it is gone (finished and deleted)."""
        bare = self.shards.bare(entry_id)
        items = await self.client.xrange(self.stream_of(entry_id), bare, bare)
        if not items:
            return None
        return _entry(entry_id, items[0][1])

    async def forget(self, thread: ThreadKey, entry_id: str) -> None:
        """Drop an id whose entry is already gone from the thread's set (and the pointer,
        when it names that id)."""
        await self._forget(
            keys=[self.keys.thread_queue(thread), self.keys.thread_current(thread)],
            args=[entry_id],
        )

    def finish(self, commands: Commands | Any, thread: ThreadKey, entry_id: str) -> None:
        """Queue what ends a turn: ack, delete, leave the thread's set and pointer."""
        self.remove(commands, entry_id)
        commands.zrem(self.keys.thread_queue(thread), entry_id)
        commands.delete(self.keys.thread_current(thread))

    def remove(self, commands: Commands | Any, entry_id: str) -> None:
        """Queue the entry's ack and deletion from its stream."""
        stream, bare = self.stream_of(entry_id), self.shards.bare(entry_id)
        commands.xack(stream, self.keys.workers, bare)
        commands.xdel(stream, bare)

    async def depth(self) -> tuple[int, float]:
        """How many turns are accepted and not finished (queued or running: a finished
        turn's entry is deleted), and the age in seconds of the oldest (0 when none), by
        Redis's clock (an entry id starts with the milliseconds it was added at)."""
        async with self.client.pipeline(transaction=False) as pipe:
            for shard in self.shards.all():
                pipe.xlen(self.keys.turns(shard))
                pipe.xrange(self.keys.turns(shard), count=1)
            if not self.shards.sharded:
                pipe.time()  # a cluster's pipeline sends no command without a key
            replies = await pipe.execute()
        seconds, micros = replies.pop() if not self.shards.sharded else await self.client.time()
        count = sum(int(n) for n in replies[::2])
        firsts = [int(str(first[0][0]).split("-", 1)[0]) for first in replies[1::2] if first]
        if not firsts:
            return count, 0.0
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        return count, max(now_ms - min(firsts), 0) / 1000

    async def pending_count(self) -> int:
        total = 0
        for shard in self.shards.all():
            try:
                summary = await self.client.xpending(self.keys.turns(shard), self.keys.workers)
            except redis.exceptions.ResponseError:
                continue
            total += int(summary["pending"])
        return total


def _entry(entry_id: str, fields: dict[str, str]) -> Entry:
    try:
        turn = Turn.from_json(fields["turn"])
        if "new_thread" in fields:  # joined as it was queued (``TurnQueue.enqueue(join=)``)
            turn = replace(turn, new_thread=fields["new_thread"] == "1")
        return QueuedTurn(entry_id, turn)
    except (KeyError, ValueError, TypeError):
        log.error("turn %s has an unreadable payload", entry_id)
        return Unreadable(entry_id)
