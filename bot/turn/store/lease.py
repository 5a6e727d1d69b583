"""Per-thread leases: an owner token with a short TTL, kept alive by a heartbeat.

Whoever holds a thread's lock owns its turns. The heartbeat (every third of ``lock_ttl_s``)
renews the lock and refreshes the idle time of the turn's stream entry, so a live owner's
entry is never reclaimed however long its tools run, while a dead owner's lock expires and
its entry becomes claimable within ``claim_idle_s``. Handing back (at shutdown) frees the
lock and marks the entry as long idle, so another worker claims it at its next look instead
of waiting for the takeover time.

Redis is the judge of ownership (every write to the turn's record checks the token), but a
Slack call cannot be fenced by Redis. So the lease keeps a local deadline, measured from the
moment the last renewal that worked was *sent* (Redis set the lock's expiry later than that):

    renewal sent at r ──── calls end: r + 0.7 T ── deadline D: r + 0.8 T ── lock expires
                                                                            ≥ r + T = D + 2 M

:meth:`ThreadLease.valid` says, without a round trip, whether D is still ahead (and no
renewal failed for good). :meth:`ThreadLease.bounded` runs one Slack call, or one Redis
step on the way to one: it refuses to start (``Aborted``) unless the call can end a margin
M (a tenth of the TTL) before D, with nothing awaited between that check and the call, and
cuts the call off at D - M; a renewal moves that cut-off along. Another owner can take the
thread only once the lock has expired in Redis, at least D + 2 M: whatever this owner sent
has ended 3 M (3 s with the default 10 s TTL) before the next owner's first write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator

from bot.state.redis.connection import Redis
from bot.state.redis.errors import REDIS_DOWN
from bot.state.redis.keys import Keys
from bot.state.redis.shards import Shards
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.queue import HEAD_FUNCTION, Head, QueueLook

log = logging.getLogger(__name__)

TRUSTED_SHARE = 0.8  # of the TTL after a renewal, the lease counts as held (deadline D)
MARGIN_SHARE = 0.1  # of the TTL: calls made under the lease end this long before D
HANDED_BACK_IDLE_MS = 10**12  # an entry handed back looks idle for ages: claimed at once
RETRY_RENEW_S = 0.5  # after a failed renewal (Redis away), the next try comes this soon


class Aborted(Exception):
    """The owner lost its lease or hands the turn back: stop now, write nothing more."""


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
# ACQUIRE, and a look at the thread's queue in the same step: {1, head, state}, {1} (nothing
# queued), or 0 (someone else holds the thread).
# KEYS: lock, thread's current, thread queue; ARGV: token, ttl ms, records prefix
ACQUIRE_AND_LOOK = (
    HEAD_FUNCTION
    + """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
    and redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local found = head(KEYS[2], KEYS[3], ARGV[3])
if found then return {1, found[1], found[2]} end
return {1}
"""
)
# The next turn of the thread, or, when nothing is queued, the lock freed in the same step:
# a turn queued before it is found, one queued after it finds the thread free.
# Returns {head, state}, {} (freed), or {'stale'} (the lock is not ours).
# KEYS: lock, thread's current, thread queue; ARGV: token, records prefix
NEXT_OR_RELEASE = (
    HEAD_FUNCTION
    + """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'stale'} end
local found = head(KEYS[2], KEYS[3], ARGV[2])
if found then return found end
redis.call('DEL', KEYS[1])
return {}
"""
)
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
        self._acquire_and_look = client.register_script(ACQUIRE_AND_LOOK)
        self._next_or_release = client.register_script(NEXT_OR_RELEASE)

    async def try_acquire(
        self, thread: ThreadKey, consumer: str, *, look: QueueLook | None = None
    ) -> ThreadLease | None:
        """The thread's lease, or None when someone else holds it. With ``look``, the
        thread's queue is looked at in the same step (:attr:`ThreadLease.first`)."""
        token = secrets.token_hex(16)
        key = self.keys.lock(thread)
        stream = self.keys.turns(self.keys.shards.of(thread))
        loop = asyncio.get_running_loop()
        asked_at = loop.time()
        if look is None:
            if await self._acquire(keys=[key], args=[token, self.ttl_ms]):
                return ThreadLease(self, key, stream, token, consumer, asked_at)
            return None
        reply = await self._acquire_and_look(
            keys=[key, look.current, look.queue], args=[token, self.ttl_ms, look.records]
        )
        if not reply:
            return None
        lease = ThreadLease(self, key, stream, token, consumer, asked_at)
        lease.first = (str(reply[1]), str(reply[2])) if len(reply) == 3 else None
        return lease


class ThreadLease:
    def __init__(
        self,
        locks: ThreadLocks,
        key: str,
        stream: str,
        token: str,
        consumer: str,
        renewed_at: float,
    ) -> None:
        self.locks = locks
        self.key = key
        self.stream = stream  # the turn stream of the thread's shard
        self.token = token
        self.consumer = consumer
        self.entry = ""  # the stream entry of the turn being worked on
        self.first: Head | None = None  # the thread's next turn, as seen when it was taken
        self.released = False  # let go of (the heartbeat stops)
        self.lost = asyncio.Event()  # set when another owner may have the thread now
        self.margin_s = MARGIN_SHARE * locks.ttl_ms / 1000
        self._trusted_until = renewed_at + TRUSTED_SHARE * locks.ttl_ms / 1000
        self._bounds: set[asyncio.Timeout] = set()  # calls under way, cut off at calls_end
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

    @property
    def calls_end(self) -> float:
        """The loop time by which every call made under this lease must have ended."""
        return self._trusted_until - self.margin_s

    def time_left(self) -> float:
        """Seconds a call may still take under this lease (0: none may be started)."""
        if not self.valid():
            return 0.0
        return max(self.calls_end - asyncio.get_running_loop().time(), 0.0)

    @contextlib.asynccontextmanager
    async def bounded(self, what: str) -> AsyncIterator[None]:
        """Run one call (a Slack call, or a Redis step on the way to one) within the lease:
        :class:`Aborted` at once when it could not end before :attr:`calls_end`, and when
        it is still running then (moved along by every renewal)."""
        if self.time_left() <= 0:
            raise Aborted(f"{what}: no time left in the lease of {self.key}")
        timeout = asyncio.timeout_at(self.calls_end)
        self._bounds.add(timeout)
        try:
            async with timeout:
                yield
        except TimeoutError as exc:
            if timeout.expired():
                raise Aborted(f"{what}: cut off at the end of the lease of {self.key}") from exc
            raise
        finally:
            self._bounds.discard(timeout)

    async def renew(self) -> bool:
        loop = asyncio.get_running_loop()
        asked_at = loop.time()
        locks = self.locks
        renewed = await locks._heartbeat(
            keys=[self.key, self.stream],
            args=[
                self.token,
                locks.ttl_ms,
                locks.keys.workers,
                self.consumer,
                Shards.bare(self.entry),
            ],
        )
        if renewed and not self.lost.is_set():
            self._trusted_until = asked_at + TRUSTED_SHARE * locks.ttl_ms / 1000
            self._expiry.cancel()
            self._expiry = loop.call_at(self._trusted_until, self._expire)
            for timeout in self._bounds:
                if not timeout.expired():
                    timeout.reschedule(self.calls_end)
        return bool(renewed)

    async def release(self) -> bool:
        """Free the lock if we still own it; a lock someone else holds is left alone."""
        self._expiry.cancel()
        try:
            return bool(await self.locks._release(keys=[self.key], args=[self.token]))
        except REDIS_DOWN:
            log.warning("could not release %s; it frees itself when its TTL ends", self.key)
            return False

    async def next_or_release(self, look: QueueLook) -> Head | None:
        """The thread's next turn; or, when nothing is queued, the lock freed in the same
        step (None). :class:`Aborted` when the lock is no longer ours."""
        locks = self.locks
        reply = await locks._next_or_release(
            keys=[self.key, look.current, look.queue], args=[self.token, look.records]
        )
        if reply and reply[0] == "stale":
            self.lost.set()
            raise Aborted(f"lost the lock of {self.key}")
        if not reply:
            self.freed()
            return None
        return str(reply[0]), str(reply[1])

    def freed(self) -> None:
        """The lock was freed in the same step as a last look at the thread's queue (here,
        or by the turn's last move): the heartbeat stops, nothing is released again."""
        self.released = True
        self._expiry.cancel()

    async def hand_back(self) -> None:
        """Let another worker take the thread now: free the lock, and make the turn's entry
        claimable at once."""
        locks = self.locks
        self._expiry.cancel()
        self.lost.set()
        try:
            await locks._hand_back(
                keys=[self.key, self.stream],
                args=[
                    self.token,
                    locks.keys.workers,
                    self.consumer,
                    Shards.bare(self.entry),
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
            if self.released:
                return
            try:
                # A renewal that hangs past the lease's end is no renewal.
                async with asyncio.timeout_at(max(self._trusted_until, loop.time() + 0.05)):
                    renewed = await self.renew()
                if not renewed:
                    if self.released:
                        return  # let go of meanwhile
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
