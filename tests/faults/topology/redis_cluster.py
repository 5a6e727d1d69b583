"""A private Redis Cluster of three primaries with one replica each
(:class:`~tests.fakes.redis_cluster.PrivateRedisCluster`); the replicas get one node's URL
and ``redis: {cluster: true, shards: 16}``. The harness reads from every primary the
cluster's nodes name now (CLUSTER NODES, parsed by :func:`parse_nodes`), asked again at
every read.

Its fault: :meth:`ClusterTopology.failover` (CLUSTER FAILOVER on a replica), timed in a
:class:`~tests.faults.topology.base.FailoverTimes`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio
import redis.exceptions
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from bot.state.redis.shards import shard_tag
from tests.fakes.redis_cluster import PrivateRedisCluster
from tests.faults.topology.base import (
    ASK_TIMEOUT_S,
    CLIENT_TIMEOUT_S,
    REDIS_AWAY,
    FailoverTimes,
    Topology,
    ask,
)

SHARDS = 16  # redis.shards on the cluster, as tests/bot/cluster


class ClusterTopology(Topology):
    kind = "cluster"

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
