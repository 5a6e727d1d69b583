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
What remains: writes in the second or so before the pool's next look can still reach the
old primary; ``min-replicas-to-write`` on the servers closes that (docs/deploy.md).
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
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.config.errors import ConfigError

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
SENTINEL_PORT = 26379
SENTINEL_TIMEOUT_S = 1.0
RECHECK_EVERY_S = 1.0  # how often, at most, a busy pool asks the Sentinels for the primary
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
