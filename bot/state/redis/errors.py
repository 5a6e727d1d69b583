"""Redis failures as one typed error the callers can act on."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import redis.exceptions
from redis._parsers.base import BaseParser

T = TypeVar("T")


class NoReplicasError(redis.exceptions.ResponseError):
    """NOREPLICAS: the primary refuses writes while too few replicas follow it
    (``min-replicas-to-write``), as during a failover with one replica."""


# redis-py reads an error reply's first word to choose its exception; it has no class of its
# own for NOREPLICAS (the reply of a refused write, also from inside a script).
BaseParser.EXCEPTION_CLASSES.setdefault("NOREPLICAS", NoReplicasError)


class NotReplicated(redis.exceptions.RedisError):
    """A write was made, but too few replicas confirmed it in time (WAIT): it may be lost in
    a failover, so nothing may be built on it (redis.replica_acks, replication.py)."""


# What a Redis outage looks like from redis-py: refused or dropped connections, timeouts;
# in a cluster also a cluster that cannot be reached, is down, or serves a slot nowhere or
# elsewhere for now (a failover or a resharding under way); around a failover, a primary that
# is now a replica (READONLY), has lost its primary (MASTERDOWN), refuses writes for want of
# replicas (NOREPLICAS), is loading its data (LOADING: a ConnectionError), or a write that no
# replica confirmed.
REDIS_DOWN: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    redis.exceptions.RedisClusterException,  # no node answers (SlotNotCoveredError too)
    redis.exceptions.ReadOnlyError,
    redis.exceptions.MasterDownError,
    NoReplicasError,
    NotReplicated,
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
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise StateUnavailable(f"Redis is unreachable: {why}") from exc
