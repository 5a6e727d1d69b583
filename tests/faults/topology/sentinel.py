"""A private primary, one replica and THREE Sentinels (quorum 2, down-after 1 s,
failover-timeout 5 s: :class:`~tests.fakes.redis_sentinel.PrivateSentinel`); the replicas
get a ``redis+sentinel://`` URL naming the three. The harness reads from the primary the
Sentinels name now, asked again at every read.

Its faults: :meth:`SentinelTopology.failover` (SENTINEL FAILOVER) and
:meth:`SentinelTopology.kill_primary` (SIGKILL of the primary), each timed in a
:class:`~tests.faults.topology.base.FailoverTimes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio
import redis.exceptions

from tests.fakes.redis_sentinel import PrivateSentinel
from tests.faults.topology.base import ASK_TIMEOUT_S, REDIS_AWAY, FailoverTimes, Topology, ask

SENTINELS = 3


async def healthy_primary(sentinel: redis.asyncio.Redis, service: str) -> int | None:
    """The port a Sentinel names as the healthy primary of ``service`` (what redis-py asks:
    SENTINEL MASTER), None while it knows no healthy one."""
    state: dict[str, Any] = await sentinel.sentinel_master(service)  # type: ignore[assignment]
    if state["is_master"] and not (state["is_sdown"] or state["is_odown"]):
        return int(state["port"])
    return None


class SentinelTopology(Topology):
    kind = "sentinel"

    def __init__(self, *, min_replicas_to_write: int = 0) -> None:
        super().__init__()
        self.setup = PrivateSentinel(
            "faults", sentinels=SENTINELS, min_replicas_to_write=min_replicas_to_write
        )
        self._primary: int | None = None  # the primary the Sentinels named when last asked

    def start(self) -> None:
        self.setup.start()

    def close(self) -> None:
        self.setup.close()

    @property
    def url(self) -> str:
        return self.setup.url

    def client(self) -> redis.asyncio.Redis:
        """A client of the primary the Sentinels named when last asked (:meth:`primaries`
        and :meth:`primary_for` ask; a scenario that tampers should call one of them first)."""
        return self.node(self._primary or self.setup.primary_port)

    async def named_primary(self) -> int | None:
        """The port the first Sentinel that answers names as the healthy primary (what
        redis-py asks: SENTINEL MASTER), None when none names one."""
        for port in self.setup.sentinel_ports:
            with contextlib.suppress(*REDIS_AWAY):
                return await healthy_primary(self.node(port, ASK_TIMEOUT_S), self.setup.service)
        return None

    async def primaries(self) -> list[redis.asyncio.Redis]:
        named = await self.named_primary()
        if named is None:
            raise redis.exceptions.ConnectionError("no Sentinel names a healthy primary")
        self._primary = named
        return [self.client()]

    async def primary_for(self, key: str) -> redis.asyncio.Redis:
        return (await self.primaries())[0]

    # --- faults -------------------------------------------------------------------------

    async def failover(self) -> FailoverTimes:
        """SENTINEL FAILOVER, sent to one Sentinel; returns once it was sent (accepted)."""
        times = FailoverTimes("SENTINEL FAILOVER", self.setup.primary_port, self.setup.replica_port)
        sentinel = self.node(self.setup.sentinel_port)
        times.sent_at = time.monotonic()
        await ask(sentinel, "SENTINEL", "FAILOVER", self.setup.service)
        self._watch(times, self._looker())
        return times

    async def kill_primary(self) -> FailoverTimes:
        """SIGKILL of the primary (not restarted); the Sentinels promote the replica."""
        old, new = self.setup.primary_port, self.setup.replica_port
        times = FailoverTimes("SIGKILL of the primary", old, new, killed=True)
        with contextlib.suppress(*REDIS_AWAY):
            primary = await self.node(old, ASK_TIMEOUT_S).info("replication")
            replica = await self.node(new, ASK_TIMEOUT_S).info("replication")
            times.replica_behind_bytes = max(
                0, int(primary["master_repl_offset"]) - int(replica["slave_repl_offset"])
            )
        times.sent_at = time.monotonic()
        await asyncio.to_thread(self.setup.kill, old)
        self._watch(times, self._looker())
        return times

    def _looker(self) -> Callable[[FailoverTimes], Awaitable[None]]:
        baseline: dict[str, int] = {}

        async def look(times: FailoverTimes) -> None:
            now = time.monotonic()
            if times.promoted_at is None and await self._role(times.new) == "master":
                times.promoted_at = now
            named = 0
            for port in self.setup.sentinel_ports:
                with contextlib.suppress(*REDIS_AWAY):
                    sentinel = self.node(port, ASK_TIMEOUT_S)
                    named += await healthy_primary(sentinel, self.setup.service) == times.new
            if named and times.named_first_at is None:
                times.named_first_at = now
            if named == len(self.setup.sentinel_ports) and times.named_all_at is None:
                times.named_all_at = now
            await self._count_old_writes(times, baseline)
            if (
                not times.killed
                and times.demoted_at is None
                and await self._role(times.old) == "slave"
            ):
                times.demoted_at = now
            if times.done_at is not None:  # primary_port and replica_port follow the roles
                with contextlib.suppress(*REDIS_AWAY):
                    await asyncio.to_thread(self.setup.follow)

        return look
