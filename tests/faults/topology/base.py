"""What every topology offers the harness, and how a failover is timed.

What the harness reads from Redis itself (the tool runs, the busy check) goes through
:meth:`Topology.primaries` and :meth:`Topology.primary_for`: the primary the Sentinels name
now, or every primary the cluster's nodes name now, asked again at every read. A failover
under way shows as the usual ``REDIS_AWAY`` errors, which the harness rides out.

The faults (:meth:`~tests.faults.topology.sentinel.SentinelTopology.failover`,
:meth:`~tests.faults.topology.sentinel.SentinelTopology.kill_primary`,
:meth:`~tests.faults.topology.redis_cluster.ClusterTopology.failover`) return as soon as
they were injected, with a :class:`FailoverTimes` that a watcher (:meth:`Topology._watch`,
polling every POLL_S) fills in: when the replica answered ROLE as a primary, when the
Sentinels (or every node of the cluster) named it, when the old primary answered ROLE as a
replica, and how many writes the old primary still took after the new one was promoted and
named (lost when it resyncs as a replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio
import redis.exceptions
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

POLL_S = 0.02  # how often the failover watcher looks
WATCH_S = 60.0  # it gives up after this
ASK_TIMEOUT_S = 0.5  # the watcher's and the harness's clients: a server away is not waited for
CLIENT_TIMEOUT_S = 2.0
# Failed-over errors: redis-py's (a cluster's RedisClusterException is not a RedisError),
# and the socket's.
REDIS_AWAY: tuple[type[BaseException], ...] = (
    redis.exceptions.RedisError,
    redis.exceptions.RedisClusterException,
    OSError,
)
# The commands counted as writes on a demoted primary (INFO commandstats): the bot's Lua
# steps and every plain write it or the fault tools make. XREADGROUP (it writes the pending
# list) is left out: the workers' empty blocking reads would drown the rest.
WRITES = frozenset(
    {
        "evalsha",
        "eval",
        "fcall",
        "xadd",
        "xack",
        "xdel",
        "xclaim",
        "xautoclaim",
        "xtrim",
        "xgroup|create",
        "xgroup|createconsumer",
        "set",
        "setex",
        "getdel",
        "del",
        "unlink",
        "expire",
        "pexpire",
        "persist",
        "zadd",
        "zrem",
        "hset",
        "hdel",
        "hincrby",
        "incr",
        "incrby",
        "rpush",
        "lpush",
        "ltrim",
        "lpop",
        "rpop",
        "sadd",
        "srem",
    }
)

Client = redis.asyncio.Redis | RedisCluster


@dataclass
class FailoverTimes:
    """One failover, as seen from outside (time.monotonic() throughout)."""

    fault: str  # "SENTINEL FAILOVER", "SIGKILL of the primary", "CLUSTER FAILOVER"
    old: int  # the old primary's port
    new: int  # the replica that takes over
    sent_at: float = 0.0  # the fault was injected (the command sent, the signal sent)
    promoted_at: float | None = None  # the new primary answered ROLE as master
    named_first_at: float | None = None  # a Sentinel (or a node of the cluster) named it
    named_all_at: float | None = None  # every Sentinel (every live node) named it
    demoted_at: float | None = None  # the old primary answered ROLE as a replica
    killed: bool = False  # the old primary is gone (never demoted)
    writes_after_promotion: int = 0  # the old primary took these after the promotion
    writes_after_named: int = 0  # ... and these after the new primary was named
    last_write_at: float | None = None  # its last write after the promotion
    replica_behind_bytes: int | None = None  # at a kill: what the replica had not yet got
    detail: str = ""  # which shard, or how many threads
    threads: tuple[str, ...] = ()  # the threads (root ts) whose keys the old primary held
    gave_up: bool = False  # the watcher saw no end within WATCH_S
    done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def done_at(self) -> float | None:
        """The failover is over: named everywhere and (unless killed) the old primary
        demoted."""
        if self.named_all_at is None:
            return None
        if self.killed:
            return self.named_all_at
        if self.demoted_at is None:
            return None
        return max(self.named_all_at, self.demoted_at)

    def notes(self) -> list[str]:
        def at(moment: float | None) -> str:
            return "never" if moment is None else f"+{moment - self.sent_at:.2f} s"

        lines = [
            f"{self.fault} ({self.old} -> {self.new}{'; ' + self.detail if self.detail else ''}):"
            f" promoted {at(self.promoted_at)}, named by the first {at(self.named_first_at)}, "
            f"by all {at(self.named_all_at)}, "
            + (
                "old primary killed"
                if self.killed
                else f"old primary demoted {at(self.demoted_at)}"
            )
        ]
        if not self.killed:
            lines.append(
                f"the old primary ran {self.writes_after_promotion} writes (write commands and "
                f"scripts) after the promotion ({self.writes_after_named} after the new primary "
                f"was named), the last {at(self.last_write_at)}: lost when it was demoted"
            )
        if self.replica_behind_bytes is not None:
            lines.append(f"at the kill the replica was {self.replica_behind_bytes} bytes behind")
        if self.gave_up:
            lines.append(f"the failover did not end within {WATCH_S:.0f} s")
        return lines


async def ask(client: redis.asyncio.Redis, *command: str) -> Any:
    """A raw command (its words apart, so redis-py hands back the server's reply as it is)."""
    return await client.execute_command(*command)  # type: ignore[no-untyped-call]


class Topology:
    """The servers, the app's REDIS_URL and config, and the harness's own clients."""

    kind = ""

    def __init__(self) -> None:
        self._nodes: dict[tuple[int, float], redis.asyncio.Redis] = {}  # by port and timeout
        self._client: Client | None = None
        self._watchers: list[asyncio.Task[None]] = []

    # --- servers (blocking: run them in a thread) -----------------------------------------

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Kill every server and remove their files, without an event loop (idempotent)."""
        raise NotImplementedError

    # --- what the app is given --------------------------------------------------------------

    @property
    def url(self) -> str:
        raise NotImplementedError

    def app_config(self) -> dict[str, Any]:
        """More of the app's config (its ``redis`` section)."""
        return {}

    def recorder_env(self) -> dict[str, str]:
        """Where tests.fakes.fault_tools records the tool runs (FAULT_REDIS_URL, ...)."""
        return {"FAULT_REDIS_URL": self.url}

    # --- the harness's reads ----------------------------------------------------------------

    def client(self) -> Client:
        """A client for scenarios that tamper with keys (made once)."""
        raise NotImplementedError

    async def primaries(self) -> list[redis.asyncio.Redis]:
        """A client of every server that is a primary now."""
        raise NotImplementedError

    async def primary_for(self, key: str) -> redis.asyncio.Redis:
        """A client of the primary that serves ``key`` now."""
        raise NotImplementedError

    def node(self, port: int, timeout_s: float = CLIENT_TIMEOUT_S) -> redis.asyncio.Redis:
        """A plain client of the server on ``port`` (made once per port and timeout), no
        retries: a server away answers with an error at once."""
        key = (port, timeout_s)
        if key not in self._nodes:
            self._nodes[key] = redis.asyncio.Redis(
                host="127.0.0.1",
                port=port,
                decode_responses=True,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                retry=Retry(NoBackoff(), 0),
            )
        return self._nodes[key]

    async def aclose(self) -> None:
        for task in self._watchers:
            task.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        clients: list[Client] = [*self._nodes.values()]
        if self._client is not None:
            clients.append(self._client)
        for client in clients:
            with contextlib.suppress(*REDIS_AWAY):
                await client.aclose()
        self._nodes.clear()
        self._client = None

    # --- watching a failover --------------------------------------------------------------

    def _watch(
        self, times: FailoverTimes, look: Callable[[FailoverTimes], Awaitable[None]]
    ) -> None:
        self._watchers.append(asyncio.create_task(self._watching(times, look)))

    async def _watching(
        self, times: FailoverTimes, look: Callable[[FailoverTimes], Awaitable[None]]
    ) -> None:
        try:
            while time.monotonic() < times.sent_at + WATCH_S:
                await look(times)
                if times.done_at is not None:
                    return
                await asyncio.sleep(POLL_S)
            times.gave_up = True
        finally:
            times.done.set()

    async def _role(self, port: int) -> str | None:
        with contextlib.suppress(*REDIS_AWAY):
            return str((await ask(self.node(port, ASK_TIMEOUT_S), "ROLE"))[0])
        return None

    async def _writes(self, port: int) -> int | None:
        """How many write commands the server on ``port`` has run (INFO commandstats)."""
        with contextlib.suppress(*REDIS_AWAY):
            stats = await self.node(port, ASK_TIMEOUT_S).info("commandstats")
            return sum(  # a script refused (NOREPLICAS, READONLY) wrote nothing
                int(fields["calls"]) - int(fields.get("failed_calls", 0))
                for name, fields in stats.items()
                if name.removeprefix("cmdstat_") in WRITES
            )
        return None

    async def _count_old_writes(self, times: FailoverTimes, baseline: dict[str, int]) -> None:
        """While the old primary is still one, count the writes it takes after the promotion
        and after the naming (``baseline`` keeps its counts at those moments)."""
        if times.killed or times.demoted_at is not None or times.promoted_at is None:
            return
        writes = await self._writes(times.old)
        if writes is None:
            return
        baseline.setdefault("promoted", writes)
        if times.named_first_at is not None:
            baseline.setdefault("named", writes)
        after = writes - baseline["promoted"]
        if after > times.writes_after_promotion:
            times.writes_after_promotion = after
            times.last_write_at = time.monotonic()
        if "named" in baseline:
            times.writes_after_named = max(times.writes_after_named, writes - baseline["named"])
