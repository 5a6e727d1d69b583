"""Blocking reads of every shard's turn stream at once, for one consumer.

A Redis Cluster serves no read across slots, so a worker cannot wait on all the shards'
streams with one XREADGROUP. Instead a reader per shard waits on its own stream while the
worker wants turns, and hands what it read to the worker's next :meth:`ShardReaders.take`.
Readers read only while a take waits, so a busy worker does not pile up entries it cannot
start: at most one read per shard finishes after the take it was for, and its entries wait
for the next take (or, if the worker stops first, for another worker to claim them once
idle).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from bot.state.redis.errors import REDIS_RETRYABLE
from bot.turn.model import Entry

log = logging.getLogger(__name__)

READ_BLOCK_MS = 2000  # how long one reader's read waits on its stream
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 10.0


# One shard's read: shard, consumer, count, block ms (TurnQueue.read_shard).
ReadShard = Callable[[int, str, int, int], Awaitable[list[Entry]]]


class ShardReaders:
    def __init__(self, read_shard: ReadShard, shards: list[int], consumer: str) -> None:
        self.read_shard = read_shard
        self.consumer = consumer
        self.buffer: list[Entry] = []
        self.count = 1  # how many the waiting take wants
        self.wanted = asyncio.Event()  # a take waits: the readers read
        self.arrived = asyncio.Event()
        self.tasks = [asyncio.create_task(self._read(shard)) for shard in shards]

    async def take(self, count: int, block_ms: int) -> list[Entry]:
        """Up to ``count`` entries read from any shard, waiting up to ``block_ms`` for one."""
        if not self.buffer:
            self.count = count
            self.arrived.clear()
            self.wanted.set()
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.arrived.wait(), max(block_ms, 1) / 1000)
            finally:
                self.wanted.clear()
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    async def _read(self, shard: int) -> None:
        backoff = BACKOFF_START_S
        while True:
            await self.wanted.wait()
            try:
                entries = await self.read_shard(shard, self.consumer, self.count, READ_BLOCK_MS)
            except REDIS_RETRYABLE as exc:
                log.warning(
                    "reading shard %d of the turn queue failed (%s: %s); again in %.1f s",
                    shard,
                    type(exc).__name__,
                    exc,
                    backoff,
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            backoff = BACKOFF_START_S
            if entries:
                self.buffer.extend(entries)
                self.arrived.set()

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
