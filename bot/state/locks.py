"""Per-thread locks: an owner token, a TTL renewed while the turn runs, release by the owner."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator

from bot.state.connection import Redis
from bot.state.errors import REDIS_DOWN
from bot.state.keys import Keys
from bot.turn import ThreadKey

log = logging.getLogger(__name__)

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


class ThreadLocks:
    def __init__(self, client: Redis, keys: Keys, ttl_s: float) -> None:
        self.client = client
        self.keys = keys
        self.ttl_ms = int(ttl_s * 1000)
        self._release = client.register_script(RELEASE)
        self._renew = client.register_script(RENEW)

    async def try_acquire(self, thread: ThreadKey) -> ThreadLock | None:
        token = secrets.token_hex(16)
        key = self.keys.lock(thread)
        if await self.client.set(key, token, nx=True, px=self.ttl_ms):
            return ThreadLock(self, key, token)
        return None


class ThreadLock:
    def __init__(self, locks: ThreadLocks, key: str, token: str) -> None:
        self.locks = locks
        self.key = key
        self.token = token
        self.lost = asyncio.Event()  # set when another owner may have the thread now

    async def renew(self) -> bool:
        return bool(await self.locks._renew(keys=[self.key], args=[self.token, self.locks.ttl_ms]))

    async def release(self) -> bool:
        """Free the lock if we still own it; a lock someone else holds is left alone."""
        try:
            return bool(await self.locks._release(keys=[self.key], args=[self.token]))
        except REDIS_DOWN:
            log.warning("could not release %s; it frees itself when its TTL ends", self.key)
            return False

    @contextlib.asynccontextmanager
    async def kept_alive(self) -> AsyncIterator[asyncio.Event]:
        """Renew every third of the TTL while the body runs; yield the ``lost`` event.

        If the lock cannot be renewed before it would expire (taken over, or Redis away too
        long), ``lost`` is set so the turn stops instead of running twice.
        """
        task = asyncio.create_task(self._keep())
        try:
            yield self.lost
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep(self) -> None:
        interval = self.locks.ttl_ms / 3000
        loop = asyncio.get_running_loop()
        valid_until = loop.time() + self.locks.ttl_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                if not await self.renew():
                    log.warning("lost %s to another owner", self.key)
                    self.lost.set()
                    return
                valid_until = loop.time() + self.locks.ttl_ms / 1000
            except REDIS_DOWN:
                if loop.time() >= valid_until:
                    log.warning("could not renew %s before it expired", self.key)
                    self.lost.set()
                    return
