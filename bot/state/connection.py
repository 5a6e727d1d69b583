"""One Redis client per process: the real server at REDIS_URL, or an embedded one."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import fakeredis
import redis.asyncio as redis

log = logging.getLogger(__name__)

# redis-py's annotations type every reply as bytes | str | None even with
# decode_responses=True (which this bot always uses), so the client is untyped here and
# replies are converted where they are read.
Redis: TypeAlias = Any


@dataclass
class RedisHandle:
    client: Redis
    embedded: bool

    async def aclose(self) -> None:
        await self.client.aclose()


def connect(url: str | None, max_connections: int = 256) -> RedisHandle:
    """A client for ``url``; without one, an in-process Redis (fakeredis) for one process."""
    if not url:
        log.warning(
            "REDIS_URL is not set: using an embedded in-process Redis. State (histories, "
            "queued turns, switches, grants, audit) is kept in memory only and is lost when "
            "this process stops; run one process only."
        )
        embedded = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True)
        return RedisHandle(embedded, embedded=True)
    parts = urlsplit(url)
    log.info("using Redis at %s:%s", parts.hostname, parts.port or 6379)  # never the password
    # A blocking pool waits for a free connection when many turns run at once, where the
    # default pool fails at once with "Too many connections".
    pool = redis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=10,
        decode_responses=True,
        socket_timeout=15,  # longer than the blocking stream reads (2 s)
        socket_connect_timeout=3,
        health_check_interval=15,
    )
    return RedisHandle(redis.Redis(connection_pool=pool), embedded=False)
