"""Redis, as `slack-agent check` sees it: reachable, version, persistence, eviction, and
whether what the bot acknowledges survives a failover (its replicas)."""

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
    url: str | None,
    require_persistence: bool,
    *,
    cluster: bool = False,
    replica_acks: int | None = None,
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
    sentinels = urlsplit(url).scheme in SENTINEL_SCHEMES
    if cluster or sentinels:
        # The client the bot itself would use.
        handle = connect(url, 8, cluster=cluster, replica_acks=replica_acks)
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
        if not cluster:
            found.append(await _replicas(client, sentinels, replica_acks))
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


async def _replicas(client: Any, sentinels: bool, replica_acks: int | None) -> Finding:
    """Whether an acknowledged event survives a failover: the writes the bot builds on are
    confirmed by replicas (redis.replica_acks), and enough replicas follow the primary."""
    try:
        following = int((await client.info("replication")).get("connected_slaves", 0))
    except RedisError as exc:
        return warn(AREA, f"could not read the primary's replicas ({reason(exc)})")
    wanted = (1 if sentinels else 0) if replica_acks is None else replica_acks
    if not wanted:
        if not following:
            return ok(AREA, "no replica, and none asked to confirm writes (redis.replica_acks 0)")
        return warn(
            AREA,
            f"{following} replica(s) follow the primary, but none is asked to confirm a write: "
            "a failover can lose events already acknowledged to Slack, or answer one twice; "
            "set redis.replica_acks: 1 (docs/deploy.md)",
        )
    if following < wanted:
        consequence = (
            "the bot waits for none while the Sentinels see none in good health, and the "
            "writes made then are lost if the primary crashes too"
            if sentinels
            else "every write is refused until they follow (events get 503s)"
        )
        return warn(
            AREA,
            f"redis.replica_acks is {wanted} but {following} replica(s) follow the primary: "
            f"{consequence}",
        )
    if sentinels and following < 2:
        return warn(
            AREA,
            "writes are confirmed by the one replica (WAIT); give the primary a second: when "
            "the primary crashes, the promoted replica has none to confirm its writes until "
            "the old primary is back",
        )
    return ok(
        AREA, f"writes confirmed by {wanted} of the {following} replica(s) that follow (WAIT)"
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
