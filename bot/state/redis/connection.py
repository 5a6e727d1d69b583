"""One Redis client per process: the real server at REDIS_URL, or an embedded one."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import redis.asyncio as redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.config.errors import ConfigError
from bot.state.redis.replication import DEFAULT_TIMEOUT_MS, Replication
from bot.state.redis.sentinel import (
    SENTINEL_SCHEMES,
    SentinelReplicas,
    sentinel_address,
    sentinel_client,
)

log = logging.getLogger(__name__)

# redis-py's annotations type every reply as bytes | str | None even with
# decode_responses=True (which this bot always uses), so the client is untyped here and
# replies are converted where they are read.
Redis: TypeAlias = Any

# A command that meets a dropped connection or a timeout is sent again on a fresh
# connection after 0.1, 0.2, 0.4 and 0.5 s: after a Redis restart every pooled connection
# is stale, and each one's first command must still succeed. When Redis is refusing
# connections a command gives up after about 1.2 s, well inside Slack's 3-second ack.
RETRIES = 4
BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 0.5
# An idle pooled connection is PINGed (and reconnected if dead) before it is used again.
HEALTH_CHECK_INTERVAL_S = 10
URL_SCHEMES = ("redis", "rediss", "unix")  # what redis-py's URL parser takes
CONNECT_TIMEOUT_S = 1.0
# What each connection tells the server (CLIENT SETINFO): redis-py reads its own version
# from the installed package's metadata for every connection it makes unless given this.
DRIVER_INFO = DriverInfo()


def retry_policy() -> Retry:
    """What every pooled connection does with connection errors and timeouts."""
    return Retry(
        ExponentialBackoff(cap=BACKOFF_CAP_S, base=BACKOFF_BASE_S),
        RETRIES,
        supported_errors=(RedisConnectionError, RedisTimeoutError),
    )


class ClusterClient(RedisCluster):
    """redis-py's cluster client, made to learn the cluster's nodes and slots before a
    command's first step: its own first step (resolving the command's policy) uses a node
    connection that discovery then closes under a burst of first commands (redis-py 8.1)."""

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if self._initialize:
            await self.initialize()
        return await super().execute_command(*args, **kwargs)


@dataclass
class RedisHandle:
    client: Redis
    embedded: bool
    cluster: bool = False
    # How many replicas must confirm what the bot builds on (replication.py); none: off.
    replication: Replication = field(default_factory=Replication)

    async def warm(self, connections: int) -> int:
        """Open up to ``connections`` pooled connections now, so a burst of turns finds
        them ready rather than connecting on its way; returns how many the pool holds open.
        A connection that fails is only left for later (the pool connects on use)."""
        if self.embedded or self.cluster:
            return 0  # a cluster's client opens a pool per node as it finds the nodes
        pool = self.client.connection_pool
        wanted = min(connections, pool.max_connections)
        taken = await asyncio.gather(
            *(pool.get_connection() for _ in range(wanted)), return_exceptions=True
        )
        opened = [c for c in taken if not isinstance(c, BaseException)]
        for connection in opened:
            await pool.release(connection)
        return len(opened)

    async def aclose(self) -> None:
        await self.client.aclose()


def checked_url(url: str, *, cluster: bool = False) -> str:
    """``url`` when this bot can use it; else :class:`ConfigError` naming REDIS_URL."""
    scheme = urlsplit(url).scheme
    if scheme in SENTINEL_SCHEMES:
        if cluster:
            raise ConfigError(
                "REDIS_URL: a Sentinel URL names no cluster; with redis.cluster: true give "
                "the redis:// (or rediss://) URL of any node of the cluster"
            )
        sentinel_address(url)
        return url
    if scheme in URL_SCHEMES and not (cluster and scheme == "unix"):
        return url
    raise ConfigError(
        f"REDIS_URL: {scheme + '://' if scheme else 'no scheme'} is not supported; use "
        + ", ".join(f"{s}://" for s in (*URL_SCHEMES, *SENTINEL_SCHEMES))
        + (" (a cluster node is reached over TCP)" if cluster else "")
        + (
            "; for a Redis Cluster give any node's redis:// URL and set redis.cluster: true"
            if "cluster" in scheme
            else ""
        )
    )


def connect(
    url: str | None,
    max_connections: int = 256,
    *,
    cluster: bool = False,
    replica_acks: int | None = None,
    replica_ack_timeout_ms: int = DEFAULT_TIMEOUT_MS,
    connection_class: type[redis.Connection] | None = None,
) -> RedisHandle:
    """A client for ``url``; without one, an in-process Redis (fakeredis) for one process.

    ``cluster``: ``url`` names any node of a Redis Cluster. A ``redis+sentinel://`` URL
    names Sentinels that say which server is the primary (after a failover, the new one).
    ``replica_acks``: how many replicas must confirm a write the bot builds on (None: one
    behind Sentinels, else none). ``connection_class`` replaces redis-py's connection
    (tests inject faults with it)."""
    if not url:
        log.warning(
            "REDIS_URL is not set: using an embedded in-process Redis. State (histories, "
            "queued turns, switches, grants, audit) is kept in memory only and is lost when "
            "this process stops; run one process only."
        )
        import fakeredis  # only here: it (and numpy under it) costs 0.3 s of every start-up

        embedded = fakeredis.FakeAsyncRedis(
            server=fakeredis.FakeServer(), decode_responses=True, encoding_errors="replace"
        )
        return RedisHandle(embedded, embedded=True)
    url = checked_url(url, cluster=cluster)
    options: dict[str, Any] = {
        "decode_responses": True,
        "encoding_errors": "replace",  # a lone surrogate (a stream cut mid-emoji) is not fatal
        "socket_timeout": 15,  # longer than the blocking stream reads (2 s)
        "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "health_check_interval": HEALTH_CHECK_INTERVAL_S,
        "retry": retry_policy(),  # copied into every connection the pool makes
        "driver_info": DRIVER_INFO,
    }
    if connection_class:
        options["connection_class"] = connection_class
    if urlsplit(url).scheme in SENTINEL_SCHEMES:
        address = sentinel_address(url)
        log.info(
            "using the Redis primary of service %r, as Sentinels %s say",
            address.service,
            ", ".join(f"{host}:{port}" for host, port in address.sentinels),
        )
        options.pop("connection_class", None)  # the Sentinel's own connections are needed
        client = sentinel_client(address, max_connections, options)
        replication = Replication(
            1 if replica_acks is None else replica_acks,
            replica_ack_timeout_ms,
            SentinelReplicas(client.connection_pool.sentinel_manager, address.service),
        )
        return RedisHandle(client, False, replication=replication)
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port or 6379}"  # never the password
    if cluster:
        log.info("using the Redis Cluster of %s", where)
        return RedisHandle(
            ClusterClient.from_url(url, max_connections=max_connections, **options),
            embedded=False,
            cluster=True,
        )
    log.info("using Redis at %s", where)
    # A blocking pool waits for a free connection when many turns run at once, where the
    # default pool fails at once with "Too many connections".
    pool = redis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=10, **options
    )
    return RedisHandle(
        redis.Redis(connection_pool=pool),
        embedded=False,
        replication=Replication(replica_acks or 0, replica_ack_timeout_ms),
    )
