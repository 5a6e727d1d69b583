"""Redis behind Sentinels: the URL that names them, and a client that follows the primary.

redis-py asks the Sentinels for the primary only when its pool opens a connection, and a
command retried after a dropped connection reconnects to the same address
(redis/redis-py#3874). After a failover that means two faults:

- pooled connections keep writing to the old primary until the Sentinels demote it
  (about ten seconds with Redis 7.0), and those writes are lost when it resyncs;
- a retried command (a worker's blocking read, cut by the demotion) goes back to the old
  primary, now a replica, and fails with every retry.

So here every connect asks the Sentinels (a retry's reconnect too), and the pool asks them
again at most once a second as it hands out connections, dropping a pooled connection to a
server that is no longer the primary. The pool blocks when full, as the direct one does.
Writes in the second or so before the pool's next look can still reach the old primary;
:class:`SentinelReplicas` makes sure nothing the bot builds on is among them (a replica's
confirmation, or the write landing on the primary every Sentinel names: replication.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as redis
from redis.asyncio.connection import AbstractConnection, SSLConnection
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.config.errors import ConfigError
from bot.state.redis.errors import NotReplicated
from bot.state.redis.replication import Requirement

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
SENTINEL_PORT = 26379
SENTINEL_TIMEOUT_S = 1.0
RECHECK_EVERY_S = 1.0  # how often, at most, a busy pool asks the Sentinels for the primary
REFRESH_S = 0.5  # how often, at most, the replication view asks every Sentinel
POOL_WAIT_S = 10  # how long a caller waits for a free connection


@dataclass(frozen=True)
class SentinelAddress:
    """``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service[/db]``: the
    Sentinels to ask (port 26379 unless given), the monitored service, the database; the
    credentials are the primary's. ``rediss+sentinel`` reaches the primary over TLS."""

    sentinels: list[tuple[str, int]]
    service: str
    db: int
    username: str | None
    password: str | None
    tls: bool


def sentinel_address(url: str) -> SentinelAddress:
    parts = urlsplit(url)
    credentials, _, hosts = parts.netloc.rpartition("@")
    username, _, password = credentials.partition(":") if credentials else ("", "", "")
    sentinels = []
    for host in hosts.split(","):
        name, colon, port = host.rpartition(":")
        if not colon or "]" in port:  # no port (an IPv6 address is in brackets)
            name, port = host, str(SENTINEL_PORT)
        if not name or not port.isdigit():
            raise ConfigError(f"REDIS_URL: {host!r} is not a Sentinel's host:port")
        sentinels.append((name.strip("[]"), int(port)))
    path = [part for part in parts.path.split("/") if part]
    if not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ConfigError(
            "REDIS_URL: a Sentinel URL ends with /<service name>[/<db>], as in "
            "redis+sentinel://sentinel-1:26379,sentinel-2:26379/mymaster/0"
        )
    return SentinelAddress(
        sentinels=sentinels,
        service=unquote(path[0]),
        db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None,
        password=unquote(password) or None,
        tls=parts.scheme.startswith("rediss"),
    )


class PrimaryConnection(SentinelManagedConnection):
    """Asks the Sentinels for the primary on every connect, a retried command's too."""

    async def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if not self.is_connected and self.connection_pool.is_master:
            self.host, self.port = await self.connection_pool.get_master_address()
        await super().connect_check_health(
            check_health=check_health, retry_socket_connect=retry_socket_connect
        )


class PrimarySSLConnection(PrimaryConnection, SSLConnection):
    pass


class PrimaryPool(SentinelConnectionPool, redis.BlockingConnectionPool):
    """Blocks when full; drops a pooled connection to a server no longer the primary."""

    def __init__(self, service_name: str, sentinel_manager: Sentinel, **kwargs: Any) -> None:
        tls = kwargs.pop("ssl", False)
        kwargs["connection_class"] = PrimarySSLConnection if tls else PrimaryConnection
        super().__init__(service_name, sentinel_manager, **kwargs)  # type: ignore[no-untyped-call]
        self._recheck_at = 0.0

    async def ensure_connection(self, connection: AbstractConnection) -> None:
        now = asyncio.get_running_loop().time()
        if now >= self._recheck_at:
            self._recheck_at = now + RECHECK_EVERY_S
            # The Sentinels away: keep the primary known so far.
            with contextlib.suppress(RedisConnectionError, RedisTimeoutError):
                await self.get_master_address()  # type: ignore[no-untyped-call]
        address = (getattr(connection, "host", None), getattr(connection, "port", None))
        if connection.is_connected and address != self.master_address:
            await connection.disconnect()
        await super().ensure_connection(connection)


def sentinel_client(address: SentinelAddress, max_connections: int, options: dict[str, Any]) -> Any:
    """A client of the primary the Sentinels name; ``options`` are its connections'."""
    sentinels = Sentinel(  # type: ignore[no-untyped-call]
        address.sentinels,
        sentinel_kwargs={
            "socket_connect_timeout": SENTINEL_TIMEOUT_S,
            "socket_timeout": SENTINEL_TIMEOUT_S,
            "decode_responses": True,
        },
    )
    return sentinels.master_for(
        address.service,
        connection_pool_class=PrimaryPool,
        db=address.db,
        username=address.username,
        password=address.password,
        ssl=address.tls,
        max_connections=max_connections,
        timeout=POOL_WAIT_S,
        **options,
    )


@dataclass(frozen=True)
class ServiceState:
    """What the Sentinels say of the service: its primary (that of the newest configuration
    epoch any of them knows), whether any is failing it over, and how many replicas follow
    that primary in good health (up, reporting the replica role, their link to it up)."""

    primary: tuple[str, int]
    failover: bool
    healthy: int


class SentinelReplicas:
    """What a write needs, as the Sentinels see the service (a
    :class:`~bot.state.redis.replication.ReplicaView`).

    Every Sentinel is asked (at most every ``REFRESH_S``, one look at a time). A failover
    under way at any of them refuses writes for now. Otherwise a write needs confirmations
    from as many replicas as follow the primary in good health, up to the configured
    number, and, when none does, to land on the primary they name. So a primary being
    demoted (its replica promoted, the Sentinels not yet switched) takes no write the bot
    builds on: its replica no longer confirms it; after the switch, neither does the old
    primary, which is no longer the one they name. A primary with no healthy replica left
    (the only one crashed, or the old primary not yet following after a switch) is not
    waited on: what it takes is lost only if it crashes too."""

    def __init__(self, sentinels: Sentinel, service: str) -> None:
        self.sentinels = sentinels
        self.service = service
        self.state: ServiceState | None = None
        self._asked_at = -REFRESH_S
        self._looking: asyncio.Future[ServiceState | None] | None = None

    async def requirement(self, wanted: int) -> Requirement:
        state = await self._state()
        if state is None:
            return Requirement(wanted)  # no Sentinel heard from yet: all that is configured
        if state.failover:
            raise NotReplicated(f"a failover of {self.service} is under way")
        return Requirement(min(wanted, state.healthy), state.primary)

    async def _state(self) -> ServiceState | None:
        loop = asyncio.get_running_loop()
        if loop.time() - self._asked_at < REFRESH_S:
            return self.state
        if self._looking is None:
            self._looking = asyncio.ensure_future(self._look())
        looking = self._looking
        try:
            return await asyncio.shield(looking)
        finally:
            if looking.done() and self._looking is looking:
                self._looking = None

    async def _look(self) -> ServiceState | None:
        answers = await asyncio.gather(
            *(self._ask(sentinel) for sentinel in self.sentinels.sentinels)
        )
        heard = [answer for answer in answers if answer is not None]
        self._asked_at = asyncio.get_running_loop().time()
        if heard:  # the Sentinels all away: what was known holds
            _, primary, _ = max(heard, key=lambda answer: answer[0])
            failover = any(state.failover for _, _, state in heard)
            healthy = max(
                (state.healthy for _, address, state in heard if address == primary), default=0
            )
            self.state = ServiceState(primary, failover, healthy)
        return self.state

    async def _ask(self, sentinel: Any) -> tuple[int, tuple[str, int], ServiceState] | None:
        try:
            async with asyncio.timeout(SENTINEL_TIMEOUT_S):
                master = await sentinel.sentinel_master(self.service, return_responses=True)
                replicas = await sentinel.sentinel_slaves(self.service)
        except (RedisConnectionError, RedisTimeoutError, ResponseError, TimeoutError, OSError):
            return None
        primary = (str(master["ip"]), int(master["port"]))
        healthy = sum(1 for replica in replicas if _follows(replica, primary))
        failover = "failover_in_progress" in str(master.get("flags", "")).split(",")
        state = ServiceState(primary, failover, healthy)
        return int(master.get("config-epoch", 0)), primary, state


def _follows(replica: dict[str, Any], primary: tuple[str, int]) -> bool:
    """A replica that follows ``primary`` in good health, as a Sentinel sees it."""
    return (
        not (replica.get("is_sdown") or replica.get("is_odown") or replica.get("is_disconnected"))
        and replica.get("role-reported") == "slave"
        and replica.get("master-link-status") == "ok"
        and (str(replica.get("master-host")), int(replica.get("master-port") or 0)) == primary
    )
