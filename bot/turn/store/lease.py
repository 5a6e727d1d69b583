"""Per-thread leases: an owner token with a short TTL, kept alive by a heartbeat.

Whoever holds a thread's lock owns its turns. The heartbeat (every third of ``lock_ttl_s``)
renews the lock and refreshes the idle time of the turn's stream entry, so a live owner's
entry is never reclaimed however long its tools run, while a dead owner's lock expires and
its entry becomes claimable within ``claim_idle_s``. Handing back (at shutdown) frees the
lock and marks the entry as long idle, so another worker claims it at its next look instead
of waiting for the takeover time.

Redis is the judge of ownership (every write to the turn's record checks the token), but a
Slack call cannot be fenced by Redis: :meth:`ThreadLease.valid` says, without a round trip,
whether the lease can still be trusted (no failed renewal, and well inside the TTL since the
last renewal that worked).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator

from bot.state.connection import Redis
from bot.state.errors import REDIS_DOWN
from bot.state.keys import Keys
from bot.turn.model import ThreadKey

log = logging.getLogger(__name__)

TRUSTED_SHARE = 0.8  # of the TTL after a renewal, the lease counts as held
HANDED_BACK_IDLE_MS = 10**12  # an entry handed back looks idle for ages: claimed at once
RETRY_RENEW_S = 0.5  # after a failed renewal (Redis away), the next try comes this soon

# KEYS: lock, stream; ARGV: token, ttl ms, group, consumer, entry id ('' for none)
HEARTBEAT = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[5] ~= '' then
  redis.call('XCLAIM', KEYS[2], ARGV[3], ARGV[4], 0, ARGV[5], 'JUSTID')
end
return 1
"""
# A thread someone else holds now is left alone; one that is ours, or free (our lease ran
# out), is freed and its entry made claimable at once.
# KEYS: lock, stream; ARGV: token, group, consumer, entry id ('' for none), idle ms
HAND_BACK = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
if ARGV[4] ~= '' then
  redis.call('XCLAIM', KEYS[2], ARGV[2], ARGV[3], 0, ARGV[4], 'IDLE', ARGV[5], 'JUSTID')
end
if holder then redis.call('DEL', KEYS[1]) end
return 1
"""
# SET NX, or the lock holds this token already (the reply to our SET was lost and resent).
ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
"""
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class ThreadLocks:
    def __init__(self, client: Redis, keys: Keys, ttl_s: float) -> None:
        self.client = client
        self.keys = keys
        self.ttl_ms = int(ttl_s * 1000)
        self._heartbeat = client.register_script(HEARTBEAT)
        self._hand_back = client.register_script(HAND_BACK)
        self._release = client.register_script(RELEASE)
        self._acquire = client.register_script(ACQUIRE)

    async def try_acquire(self, thread: ThreadKey, consumer: str) -> ThreadLease | None:
        token = secrets.token_hex(16)
        key = self.keys.lock(thread)
        loop = asyncio.get_running_loop()
        asked_at = loop.time()
        if await self._acquire(keys=[key], args=[token, self.ttl_ms]):
            return ThreadLease(self, key, token, consumer, asked_at)
        return None


class ThreadLease:
    def __init__(
        self, locks: ThreadLocks, key: str, token: str, consumer: str, renewed_at: float
    ) -> None:
        self.locks = locks
        self.key = key
        self.token = token
        self.consumer = consumer
        self.entry = ""  # the stream entry of the turn being worked on
        self.lost = asyncio.Event()  # set when another owner may have the thread now
        self._trusted_until = renewed_at + TRUSTED_SHARE * locks.ttl_ms / 1000
        # ``lost`` fires by itself when the lease runs out, even while a renewal hangs.
        self._expiry = asyncio.get_running_loop().call_at(self._trusted_until, self._expire)

    def _expire(self) -> None:
        if not self.lost.is_set():
            log.warning("the lease of %s ran out before it could be renewed", self.key)
            self.lost.set()

    def valid(self) -> bool:
        """Whether Slack may still be written to for this thread (no round trip)."""
        if self.lost.is_set():
            return False
        if asyncio.get_running_loop().time() >= self._trusted_until:
            self.lost.set()
            return False
        return True

    async def renew(self) -> bool:
        loop = asyncio.get_running_loop()
        asked_at = loop.time()
        locks = self.locks
        renewed = await locks._heartbeat(
            keys=[self.key, locks.keys.turns],
            args=[self.token, locks.ttl_ms, locks.keys.workers, self.consumer, self.entry],
        )
        if renewed and not self.lost.is_set():
            self._trusted_until = asked_at + TRUSTED_SHARE * locks.ttl_ms / 1000
            self._expiry.cancel()
            self._expiry = loop.call_at(self._trusted_until, self._expire)
        return bool(renewed)

    async def release(self) -> bool:
        """Free the lock if we still own it; a lock someone else holds is left alone."""
        self._expiry.cancel()
        try:
            return bool(await self.locks._release(keys=[self.key], args=[self.token]))
        except REDIS_DOWN:
            log.warning("could not release %s; it frees itself when its TTL ends", self.key)
            return False

    async def hand_back(self) -> None:
        """Let another worker take the thread now: free the lock, and make the turn's entry
        claimable at once."""
        locks = self.locks
        self._expiry.cancel()
        self.lost.set()
        try:
            await locks._hand_back(
                keys=[self.key, locks.keys.turns],
                args=[
                    self.token,
                    locks.keys.workers,
                    self.consumer,
                    self.entry,
                    HANDED_BACK_IDLE_MS,
                ],
            )
        except REDIS_DOWN:
            log.warning("could not hand back %s; it frees itself when its TTL ends", self.key)

    @contextlib.asynccontextmanager
    async def kept_alive(self) -> AsyncIterator[asyncio.Event]:
        """Heartbeat every third of the TTL while the body runs; yield the ``lost`` event.

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
        wait = interval
        while not self.lost.is_set():
            await asyncio.sleep(wait)
            try:
                # A renewal that hangs past the lease's end is no renewal.
                async with asyncio.timeout_at(max(self._trusted_until, loop.time() + 0.05)):
                    renewed = await self.renew()
                if not renewed:
                    log.warning("lost %s to another owner", self.key)
                    self.lost.set()
                    return
                wait = interval
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not self.valid():
                    log.warning("could not renew %s before it expired (%s)", self.key, exc)
                    return
                wait = min(interval, RETRY_RENEW_S)  # try again soon: the lease is running out
