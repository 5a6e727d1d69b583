"""The pooled Redis client survives a Redis restart, and gives up within its retry budget."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
import redis.exceptions

from bot.config.errors import ConfigError
from bot.process.state import State
from bot.state.redis.connection import (
    DRIVER_INFO,
    checked_url,
    connect,
)
from bot.state.redis.sentinel import SentinelAddress, sentinel_address
from tests.fakes.redis_server import PrivateRedis


async def warm_pool(state: State, connections: int) -> int:
    """Run enough concurrent commands that the pool holds ``connections`` open connections."""
    await asyncio.gather(
        *[state.client.blpop(f"warm:{n}", timeout=0.2) for n in range(connections)]
    )
    pool = state.client.connection_pool
    return sum(1 for c in pool._available_connections if c.is_connected)


async def test_stale_pooled_connections_recover_after_a_restart(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url)
    assert await warm_pool(state, 30) == 30

    private_redis.stop()
    private_redis.start()  # same port; every pooled connection is now dead

    results = await asyncio.gather(
        *[state.client.set(f"after:{n}", "1") for n in range(60)], return_exceptions=True
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert await state.client.dbsize() == 60


async def test_a_stopped_redis_is_given_up_within_the_retry_budget(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url)
    await warm_pool(state, 4)
    private_redis.stop()

    started = time.monotonic()
    with pytest.raises(redis.exceptions.ConnectionError):
        await state.client.get("anything")
    elapsed = time.monotonic() - started
    # Retried with backoff (0.1 + 0.2 + 0.4 + 0.5 s of sleeps), then given up: never so long
    # that Slack's 3-second ack is missed.
    assert 1.1 < elapsed < 2.0


async def test_a_command_during_a_short_outage_succeeds_once_redis_is_back(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url)
    await warm_pool(state, 4)
    private_redis.stop()
    pending = asyncio.create_task(state.client.set("k", "v"))
    await asyncio.sleep(0)  # the command is under way, failing and backing off
    await asyncio.to_thread(private_redis.start)
    assert await pending is True
    assert await state.client.get("k") == "v"


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("redis+cluster://127.0.0.1:7000", "set redis.cluster: true"),
        ("http://127.0.0.1:6379", "http:// is not supported"),
        ("127.0.0.1:6379", "is not supported"),
        ("redis+sentinel://127.0.0.1:26379", "ends with /<service name>[/<db>]"),
        ("redis+sentinel://127.0.0.1:26379/mymaster/zero", "ends with /<service name>[/<db>]"),
        ("redis+sentinel://127.0.0.1:port/mymaster", "is not a Sentinel's host:port"),
    ],
)
def test_a_redis_url_this_bot_cannot_use_is_a_config_error_naming_redis_url(
    url: str, named: str
) -> None:
    with pytest.raises(ConfigError, match=r"^REDIS_URL: ") as caught:
        connect(url)
    assert named in str(caught.value)


@pytest.mark.parametrize(
    "url",
    ["unix:///run/redis.sock", "redis+sentinel://127.0.0.1:26379/mymaster"],
)
def test_a_cluster_wants_a_node_url(url: str) -> None:
    with pytest.raises(ConfigError, match=r"^REDIS_URL: "):
        connect(url, cluster=True)


def test_a_sentinel_url_names_the_sentinels_the_service_and_the_primary_credentials() -> None:
    address = sentinel_address("rediss+sentinel://app:s%40cret@s1:26380,s2,[::1]:26381/cache/2")
    assert address == SentinelAddress(
        sentinels=[("s1", 26380), ("s2", 26379), ("::1", 26381)],
        service="cache",
        db=2,
        username="app",
        password="s@cret",
        tls=True,
    )
    assert sentinel_address("redis+sentinel://s1/mymaster").db == 0


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0", "rediss://h:6380/1", "unix:///run/redis.sock"]
)
def test_the_schemes_redis_py_takes_pass(url: str) -> None:
    assert checked_url(url) == url


async def test_warming_opens_connections_ahead_of_use_and_keeps_them(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url)
    assert await state.handle.warm(12) == 12
    clients = await state.client.client_list()
    assert len(clients) >= 12
    pool = state.client.connection_pool
    opened = [c for c in pool._available_connections if c.is_connected]
    assert len(opened) == 12
    # the driver's name and version, read once for every connection
    assert all(c.driver_info is DRIVER_INFO for c in opened)
    assert await state.handle.warm(5) == 5  # already open: nothing new
    assert len(await state.client.client_list()) == len(clients)


async def test_warming_never_exceeds_the_pool_or_touches_the_embedded_redis(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url, redis={"max_connections": 8})
    assert await state.handle.warm(50) == 8
    assert await make_state(None).handle.warm(10) == 0


async def test_warming_a_stopped_redis_opens_nothing_and_raises_nothing(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url)
    private_redis.stop()
    assert await state.handle.warm(3) == 0
