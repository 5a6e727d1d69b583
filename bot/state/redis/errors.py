"""Redis failures as one typed error the callers can act on."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import redis.exceptions

T = TypeVar("T")

# What a Redis outage looks like from redis-py: refused or dropped connections, timeouts;
# in a cluster also a cluster that cannot be reached, is down, or serves a slot nowhere or
# elsewhere for now (a failover or a resharding under way).
REDIS_DOWN: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    redis.exceptions.RedisClusterException,  # no node answers (SlotNotCoveredError too)
    ConnectionError,
    TimeoutError,
    OSError,
)


# What a polling loop (the worker's, a shard reader's) rides out with backoff: an outage, or
# an error reply (a consumer group lost with Redis's data, until it is made again).
REDIS_RETRYABLE: tuple[type[BaseException], ...] = (*REDIS_DOWN, redis.exceptions.ResponseError)


class StateUnavailable(Exception):
    """Redis cannot be reached. The Slack layer refuses the ack so Slack redelivers."""


async def guarded(awaitable: Awaitable[T]) -> T:
    """Await a Redis call; an outage becomes :class:`StateUnavailable`."""
    try:
        return await awaitable
    except REDIS_DOWN as exc:
        raise StateUnavailable(f"Redis is unreachable: {type(exc).__name__}") from exc
