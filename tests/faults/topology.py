"""The Redis a fault scenario's replicas keep their state in, and how it fails over.

Three topologies, chosen per scenario (``Cluster(..., topology=...)``):

- ``single``: one private ``redis-server`` (:class:`~tests.fakes.redis_server.PrivateRedis`),
  the default, as before;
- ``sentinel``: a private primary, one replica and THREE Sentinels (quorum 2, down-after
  1 s, failover-timeout 5 s: :class:`~tests.fakes.redis_sentinel.PrivateSentinel`); the
  replicas get a ``redis+sentinel://`` URL naming the three;
- ``cluster``: a private Redis Cluster of three primaries with one replica each
  (:class:`~tests.fakes.redis_cluster.PrivateRedisCluster`); the replicas get one node's URL
  and ``redis: {cluster: true, shards: 16}``.

What the harness reads from Redis itself (the tool runs, the busy check) goes through
:meth:`Topology.primaries` and :meth:`Topology.primary_for`: the primary the Sentinels name
now, or every primary the cluster's nodes name now, asked again at every read. A failover
under way shows as the usual ``REDIS_AWAY`` errors, which the harness rides out.

The faults (:meth:`SentinelTopology.failover`, :meth:`SentinelTopology.kill_primary`,
:meth:`ClusterTopology.failover`) return as soon as they were injected, with a
:class:`FailoverTimes` that a watcher (polling every POLL_S) fills in: when the replica
answered ROLE as a primary, when the Sentinels (or every node of the cluster) named it,
when the old primary answered ROLE as a replica, and how many writes the old primary still
took after the new one was promoted and named (lost when it resyncs as a replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio
import redis.exceptions
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot

from bot.state.redis.shards import shard_tag
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.fakes.redis_sentinel import PrivateSentinel
from tests.fakes.redis_server import PrivateRedis

SINGLE = "single"
SENTINEL = "sentinel"
REDIS_CLUSTER = "cluster"
KINDS = (SINGLE, SENTINEL, REDIS_CLUSTER)
SENTINELS = 3
SHARDS = 16  # redis.shards on the cluster, as tests/bot/cluster
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


def make_topology(
    kind: str, *, persistent: bool = False, min_replicas_to_write: int = 0
) -> Topology:
    if kind == SINGLE:
        return SingleTopology(persistent=persistent)
    if persistent:
        raise ValueError(f"a persistent Redis is only offered on the {SINGLE} topology")
    if kind == SENTINEL:
        return SentinelTopology(min_replicas_to_write=min_replicas_to_write)
    if min_replicas_to_write:
        raise ValueError(f"min-replicas-to-write is only offered on the {SENTINEL} topology")
    if kind == REDIS_CLUSTER:
        return ClusterTopology()
    raise ValueError(f"no such Redis topology: {kind!r} (one of {', '.join(KINDS)})")


async def ask(client: redis.asyncio.Redis, *command: str) -> Any:
    """A raw command (its words apart, so redis-py hands back the server's reply as it is)."""
    return await client.execute_command(*command)  # type: ignore[no-untyped-call]


async def healthy_primary(sentinel: redis.asyncio.Redis, service: str) -> int | None:
    """The port a Sentinel names as the healthy primary of ``service`` (what redis-py asks:
    SENTINEL MASTER), None while it knows no healthy one."""
    state: dict[str, Any] = await sentinel.sentinel_master(service)  # type: ignore[assignment]
    if state["is_master"] and not (state["is_sdown"] or state["is_odown"]):
        return int(state["port"])
    return None


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


class SingleTopology(Topology):
    kind = SINGLE

    def __init__(self, *, persistent: bool = False) -> None:
        super().__init__()
        self.server = PrivateRedis(appendonly=persistent)

    def start(self) -> None:
        self.server.start()

    def close(self) -> None:
        self.server.close()

    @property
    def url(self) -> str:
        return self.server.url

    def client(self) -> redis.asyncio.Redis:
        if self._client is None:
            self._client = redis.asyncio.Redis.from_url(
                self.server.url,
                decode_responses=True,
                socket_timeout=CLIENT_TIMEOUT_S,
                socket_connect_timeout=CLIENT_TIMEOUT_S,
            )
        assert isinstance(self._client, redis.asyncio.Redis)
        return self._client

    async def primaries(self) -> list[redis.asyncio.Redis]:
        return [self.client()]

    async def primary_for(self, key: str) -> redis.asyncio.Redis:
        return self.client()


class SentinelTopology(Topology):
    kind = SENTINEL

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


class ClusterTopology(Topology):
    kind = REDIS_CLUSTER

    def __init__(self) -> None:
        super().__init__()
        self.cluster = PrivateRedisCluster(primaries=3, replicas=1)

    def start(self) -> None:
        try:
            self.cluster.start()
        except BaseException:
            self.cluster.close()
            raise

    def close(self) -> None:
        self.cluster.close()

    @property
    def url(self) -> str:
        return self.cluster.url

    def app_config(self) -> dict[str, Any]:
        return {"redis": {"cluster": True, "shards": SHARDS}}

    def recorder_env(self) -> dict[str, str]:
        return {"FAULT_REDIS_URL": self.url, "FAULT_REDIS_CLUSTER": "1"}

    def client(self) -> RedisCluster:
        """A cluster client (it follows MOVED replies to the slots' new primaries)."""
        if self._client is None:
            self._client = RedisCluster.from_url(
                self.url,
                decode_responses=True,
                socket_timeout=CLIENT_TIMEOUT_S,
                socket_connect_timeout=CLIENT_TIMEOUT_S,
            )
        assert isinstance(self._client, RedisCluster)
        return self._client

    async def nodes(self) -> list[ClusterNode]:
        """CLUSTER NODES, as the first node that answers sees it."""
        for port in self.cluster.ports:
            with contextlib.suppress(*REDIS_AWAY):
                return parse_nodes(await ask(self.node(port, ASK_TIMEOUT_S), "CLUSTER", "NODES"))
        raise redis.exceptions.ConnectionError("no node of the cluster answers")

    async def primaries(self) -> list[redis.asyncio.Redis]:
        return [self.node(n.port) for n in await self.nodes() if n.primary]

    async def primary_for(self, key: str) -> redis.asyncio.Redis:
        slot = key_slot(key.encode())
        for node in await self.nodes():
            if node.primary and node.serves(slot):
                return self.node(node.port)
        raise redis.exceptions.ConnectionError(f"no primary serves slot {slot} now")

    # --- the fault ----------------------------------------------------------------------

    async def failover(
        self, *, shard: int | None = None, threads: Sequence[str] = ()
    ) -> FailoverTimes:
        """CLUSTER FAILOVER on the replica of the primary serving ``shard`` (the bot's
        shard number), or else the primary holding keys of the most of ``threads`` (each
        a thread's root ts: every key of a thread names it); returns once it was sent."""
        nodes = await self.nodes()
        held: list[str] = []
        if shard is not None:
            slot = key_slot(shard_tag(shard).encode())
            victim = next(n for n in nodes if n.primary and n.serves(slot))
            detail = f"shard {shard}"
        else:
            victim, held = await self._busiest(nodes, threads)
            detail = f"it held {len(held)} of {len(threads)} threads"
        replica = next(n for n in nodes if n.replica_of == victim.id)
        times = FailoverTimes("CLUSTER FAILOVER", victim.port, replica.port, detail=detail)
        times.threads = tuple(held)
        times.sent_at = time.monotonic()
        await ask(self.node(replica.port), "CLUSTER", "FAILOVER")
        self._watch(times, self._looker())
        return times

    async def _busiest(
        self, nodes: list[ClusterNode], threads: Sequence[str]
    ) -> tuple[ClusterNode, list[str]]:
        held: dict[str, list[str]] = {}
        primaries = [n for n in nodes if n.primary]
        for node in primaries:
            client = self.node(node.port)
            for thread in threads:
                async for _ in client.scan_iter(match=f"*{thread}*", count=1000):
                    held.setdefault(node.id, []).append(thread)
                    break
        victim = max(primaries, key=lambda n: len(held.get(n.id, [])))
        return victim, held.get(victim.id, [])

    def _looker(self) -> Callable[[FailoverTimes], Awaitable[None]]:
        baseline: dict[str, int] = {}

        async def look(times: FailoverTimes) -> None:
            now = time.monotonic()
            if times.promoted_at is None and await self._role(times.new) == "master":
                times.promoted_at = now
            if times.demoted_at is None and await self._role(times.old) == "slave":
                times.demoted_at = now
            views = []
            for port in self.cluster.ports:
                with contextlib.suppress(*REDIS_AWAY):
                    client = self.node(port, ASK_TIMEOUT_S)
                    nodes = parse_nodes(await ask(client, "CLUSTER", "NODES"))
                    info = str(await ask(client, "CLUSTER", "INFO"))
                    views.append(
                        any(n.port == times.new and n.primary for n in nodes)
                        and "cluster_state:ok" in info
                    )
            if any(views) and times.named_first_at is None:
                times.named_first_at = now
            if views and all(views) and times.named_all_at is None:
                times.named_all_at = now
            await self._count_old_writes(times, baseline)

        return look


@dataclass(frozen=True)
class ClusterNode:
    """One line of CLUSTER NODES."""

    id: str
    port: int
    flags: frozenset[str]
    replica_of: str  # the primary's id, "-" for a primary
    slots: tuple[tuple[int, int], ...]

    @property
    def primary(self) -> bool:
        return "master" in self.flags and not self.flags & {"fail", "fail?", "handshake"}

    def serves(self, slot: int) -> bool:
        return any(low <= slot <= high for low, high in self.slots)


def parse_nodes(reply: Any) -> list[ClusterNode]:
    """CLUSTER NODES, sent as two words (so redis-py hands back the server's text)."""
    text = reply if isinstance(reply, str) else str(reply)
    nodes = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        slots = []
        for served in fields[8:]:
            if served.startswith("["):  # a slot being migrated
                continue
            low, _, high = served.partition("-")
            slots.append((int(low), int(high or low)))
        nodes.append(
            ClusterNode(
                id=fields[0],
                port=int(fields[1].split("@")[0].rsplit(":", 1)[1]),
                flags=frozenset(fields[2].split(",")),
                replica_of=fields[3],
                slots=tuple(slots),
            )
        )
    return nodes
