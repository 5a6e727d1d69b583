"""Tools for the fault tests: each run's start and finish is recorded in Redis.

A ``slack-agent run`` process loads this module (``tools: {modules: [...]}``). Each record is
pushed, as JSON, onto the list ``FAULT_RUNS_KEY`` of the Redis at ``FAULT_REDIS_URL``:
``{"name", "event": "start" | "finish", "pid", "at"}`` (``at`` is ``time.time()``), so the
test can tell which process ran what, and whether a finished step ran again. Recording is
best effort: while Redis is away the step still runs, unrecorded (the error goes to stderr).

``FAULT_REDIS_URL`` may be a ``redis+sentinel://`` URL (the record goes to the primary the
Sentinels name when it is made), or, with ``FAULT_REDIS_CLUSTER=1``, a node of a Redis
Cluster (the record goes to the primary of the key's slot). On those, a record that meets a
failover is tried again for up to FAILOVER_RETRY_S; on a single Redis it is tried once.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import redis
import redis.asyncio
import redis.asyncio.sentinel
import redis.sentinel

from bot.state.redis.sentinel import SENTINEL_SCHEMES, sentinel_address
from tools import tool

RECORD_TIMEOUT_S = 1.0
FAILOVER_RETRY_S = 3.0  # on a Sentinel or cluster URL: a record is tried again this long
RETRY_EVERY_S = 0.2
AWAY = (redis.RedisError, redis.exceptions.RedisClusterException, OSError)


def run_record(name: str, event: str) -> str:
    return json.dumps({"name": name, "event": event, "pid": os.getpid(), "at": time.time()})


def _where() -> tuple[str, str]:
    return os.environ["FAULT_REDIS_URL"], os.environ["FAULT_RUNS_KEY"]


def _cluster() -> bool:
    return os.environ.get("FAULT_REDIS_CLUSTER") == "1"


def _following(url: str) -> bool:
    """The URL names Sentinels or a cluster: a failover may be under way."""
    return _cluster() or urlsplit(url).scheme in SENTINEL_SCHEMES


async def _async_client(url: str) -> Any:
    timeout = RECORD_TIMEOUT_S
    if urlsplit(url).scheme in SENTINEL_SCHEMES:
        address = sentinel_address(url)
        sentinels = redis.asyncio.sentinel.Sentinel(  # type: ignore[no-untyped-call]
            address.sentinels,
            sentinel_kwargs={"socket_timeout": timeout, "socket_connect_timeout": timeout},
        )
        try:  # the primary the Sentinels name now
            host, port = await sentinels.discover_master(address.service)
        finally:
            for sentinel in sentinels.sentinels:
                await sentinel.aclose()
        return redis.asyncio.Redis(
            host=host,
            port=port,
            db=address.db,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )
    if _cluster():
        return redis.asyncio.RedisCluster.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
    return redis.asyncio.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def _sync_client(url: str) -> Any:
    timeout = RECORD_TIMEOUT_S
    if urlsplit(url).scheme in SENTINEL_SCHEMES:
        address = sentinel_address(url)
        sentinels = redis.sentinel.Sentinel(  # type: ignore[no-untyped-call]
            address.sentinels,
            sentinel_kwargs={"socket_timeout": timeout, "socket_connect_timeout": timeout},
        )
        try:
            host, port = sentinels.discover_master(address.service)  # type: ignore[no-untyped-call]
        finally:
            for sentinel in sentinels.sentinels:
                sentinel.close()
        return redis.Redis(
            host=host,
            port=port,
            db=address.db,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )
    if _cluster():
        return redis.RedisCluster.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


async def _record(name: str, event: str) -> None:
    url, key = _where()
    record = run_record(name, event)
    deadline = time.monotonic() + (FAILOVER_RETRY_S if _following(url) else 0.0)
    while True:
        client = None
        try:
            client = await _async_client(url)
            await client.rpush(key, record)
            return
        except AWAY as exc:
            if time.monotonic() >= deadline:
                print(f"fault_tools: could not record {event} of {name}: {exc!r}", file=sys.stderr)
                return
        finally:
            if client is not None:
                await client.aclose()
        await asyncio.sleep(RETRY_EVERY_S)


def _record_sync(name: str, event: str) -> None:
    url, key = _where()
    record = run_record(name, event)
    deadline = time.monotonic() + (FAILOVER_RETRY_S if _following(url) else 0.0)
    while True:
        client = None
        try:
            client = _sync_client(url)
            client.rpush(key, record)
            return
        except AWAY as exc:
            if time.monotonic() >= deadline:
                print(f"fault_tools: could not record {event} of {name}: {exc!r}", file=sys.stderr)
                return
        finally:
            if client is not None:
                client.close()
        time.sleep(RETRY_EVERY_S)


@tool
async def slow_step(name: str, seconds: float) -> str:
    """Take ``seconds`` to do the step called ``name``.

    Args:
        name: Which step this is.
        seconds: How long it takes.
    """
    await _record(name, "start")
    await asyncio.sleep(seconds)
    await _record(name, "finish")
    return f"step {name} done"


@tool
def sync_step(name: str, seconds: float) -> str:
    """Like slow_step, but blocking a thread the whole time (a stuck synchronous tool).

    Args:
        name: Which step this is.
        seconds: How long it takes.
    """
    _record_sync(name, "start")
    time.sleep(seconds)
    _record_sync(name, "finish")
    return f"step {name} done"
