"""Is the Redis at REDIS_URL what ``redis.cluster`` says: a cluster node, or not?

Checked at start-up, so a mismatch stops the process with words that name the fix instead
of every command failing later (MOVED replies, or a cluster client that finds no cluster).
"""

from __future__ import annotations

import logging

from redis.exceptions import ResponseError

from bot.config.errors import ConfigError
from bot.state.redis.connection import RedisHandle
from bot.state.redis.errors import REDIS_DOWN

log = logging.getLogger(__name__)


async def check_cluster_mode(handle: RedisHandle, cluster: bool) -> None:
    """:class:`ConfigError` when ``cluster`` (redis.cluster) does not match the server; a
    server that does not answer is left to the usual retries."""
    if handle.embedded:
        return
    try:
        enabled = str((await handle.client.info("cluster")).get("cluster_enabled", "0")) == "1"
    except ResponseError as exc:
        log.info("could not ask Redis whether it runs as a cluster (%s)", exc)
        return
    except REDIS_DOWN as exc:  # a cluster client meeting a server without cluster mode too
        if "cluster mode is not enabled" not in str(exc).lower():
            log.info("could not ask Redis whether it runs as a cluster (%s)", exc)
            return
        enabled = False
    if cluster and not enabled:
        raise ConfigError(
            "redis.cluster is true, but the Redis at REDIS_URL is not in cluster mode "
            "(cluster_enabled:0): point REDIS_URL at a node of the cluster, or set "
            "redis.cluster: false"
        )
    if enabled and not cluster:
        raise ConfigError(
            "the Redis at REDIS_URL is a node of a Redis Cluster (cluster_enabled:1): set "
            "redis.cluster: true (docs/deploy.md)"
        )
