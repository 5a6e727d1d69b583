"""Redis, as `slack-agent check` sees it: reachable, version, persistence, eviction."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as redis
from redis.exceptions import RedisError, ResponseError

from bot.check.findings import Finding, fail, ok, reason, warn
from bot.config.errors import ConfigError
from bot.state.redis.connection import RedisHandle, checked_url, connect
from bot.state.redis.errors import REDIS_DOWN
from bot.state.redis.mode import check_cluster_mode
from bot.state.redis.persistence import ADVICE, inspect, losses
from bot.state.redis.sentinel import SENTINEL_SCHEMES, sentinel_address

AREA = "redis"
TIMEOUT_S = 3.0
NO_EVICTION = "noeviction"
UNREACHABLE: tuple[type[BaseException], ...] = (RedisError, *REDIS_DOWN)


async def check_redis(
    url: str | None, require_persistence: bool, *, cluster: bool = False
) -> list[Finding]:
    if url is None:
        detail = (
            "REDIS_URL is not set: the bot would use an embedded in-process Redis, which "
            "keeps nothing after the process stops and cannot be shared by several processes"
        )
        return (
            [fail(AREA, detail + " (redis.require_persistence is true)")]
            if (require_persistence)
            else [warn(AREA, detail)]
        )
    try:
        checked_url(url, cluster=cluster)
    except ConfigError as exc:
        return [fail(AREA, str(exc))]
    if cluster or urlsplit(url).scheme in SENTINEL_SCHEMES:
        handle = connect(url, 8, cluster=cluster)  # the client the bot itself would use
    else:
        handle = RedisHandle(
            redis.from_url(
                url,
                decode_responses=True,
                socket_connect_timeout=TIMEOUT_S,
                socket_timeout=TIMEOUT_S,
                retry_on_timeout=False,
            ),
            embedded=False,
        )
    client = handle.client
    where = _where(url)
    try:
        try:
            await check_cluster_mode(handle, cluster)
            server = await client.info("server")
        except ConfigError as exc:
            return [fail(AREA, str(exc))]
        except UNREACHABLE as exc:
            return [fail(AREA, f"cannot reach Redis at {where}: {reason(exc)}")]
        found = [ok(AREA, f"reachable at {where}, Redis {server.get('redis_version', '?')}")]
        found.append(await _persistence(client, require_persistence))
        found.append(await _eviction(client))
        return found
    finally:
        await client.aclose()


async def _persistence(client: Any, required: bool) -> Finding:
    found = await inspect(client)
    if found.persists:
        return ok(AREA, f"persistence on: {found.how}")
    consequence = f"a Redis restart loses {losses()}; to keep them, {ADVICE}"
    if found.persists is False:
        text = f"persistence off ({found.how}): {consequence}"
    else:
        text = f"persistence unknown ({found.how}); if it is off, {consequence}"
    if required:
        return fail(AREA, text + " (redis.require_persistence is true)")
    return warn(AREA, text)


async def _eviction(client: Any) -> Finding:
    try:
        try:
            policy = (await client.config_get("maxmemory-policy")).get("maxmemory-policy", "")
            limit = (await client.config_get("maxmemory")).get("maxmemory", "0")
        except ResponseError:  # CONFIG not allowed (managed Redis): INFO memory has both
            memory = await client.info("memory")
            policy = str(memory.get("maxmemory_policy", ""))
            limit = str(memory.get("maxmemory", "0"))
    except RedisError as exc:
        return warn(AREA, f"could not read maxmemory-policy ({reason(exc)})")
    if not policy:
        return warn(AREA, "could not read maxmemory-policy")
    if policy == NO_EVICTION:
        return ok(AREA, "maxmemory-policy noeviction: keys are never evicted")
    when = "when memory is full" if str(limit) != "0" else "once a maxmemory limit is set"
    return warn(
        AREA,
        f"maxmemory-policy {policy} evicts keys {when}: queued turns, thread locks or "
        "histories could vanish; set maxmemory-policy noeviction",
    )


def _where(url: str) -> str:
    """host:port/db, without the password (a Sentinel URL: the Sentinels and the service)."""
    if urlsplit(url).scheme in SENTINEL_SCHEMES:
        address = sentinel_address(url)
        hosts = ",".join(f"{host}:{port}" for host, port in address.sentinels)
        return f"service {address.service} of Sentinels {hosts}"
    parts = redis.connection.parse_url(url)
    if "path" in parts:
        return str(parts["path"])
    return f"{parts.get('host', 'localhost')}:{parts.get('port', 6379)}/{parts.get('db', 0)}"
