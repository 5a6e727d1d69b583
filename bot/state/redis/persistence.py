"""Whether Redis keeps the bot's state across its own restart, asked once when `slack-agent
run` or `slack-agent worker` starts.

``CONFIG GET appendonly`` / ``CONFIG GET save`` answer it. Managed Redis services often
disable CONFIG; then ``INFO persistence`` can still show that AOF is on, but not whether RDB
snapshots are configured, so the answer is "unknown".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError

from bot.config.errors import ConfigError
from bot.state.redis.connection import Redis, RedisHandle
from bot.state.redis.errors import REDIS_DOWN

log = logging.getLogger(__name__)

# What lives only in Redis, in the words the log and the README use.
LOST_ON_RESTART = (
    "queued and running turns",
    "conversation histories",
    "which threads the bot is in (follow-ups without a mention are no longer answered)",
    "the dedup memory (a Slack retry may be answered twice)",
    "tool switches",
    "role grants",
    "usage counters",
    "the audit log",
)
ADVICE = "set `appendonly yes` in the Redis configuration"


@dataclass(frozen=True)
class Persistence:
    """``persists``: True or False when Redis said so, None when it could not be told."""

    persists: bool | None
    how: str


def from_config(appendonly: str, save: str) -> Persistence:
    """From the values of ``CONFIG GET appendonly`` and ``CONFIG GET save``."""
    aof = appendonly.strip().lower() == "yes"
    rdb = bool(save.strip())
    if aof and rdb:
        return Persistence(True, f"AOF (appendonly yes) and RDB snapshots (save {save.strip()})")
    if aof:
        return Persistence(True, "AOF (appendonly yes)")
    if rdb:
        return Persistence(True, f"RDB snapshots only (save {save.strip()})")
    return Persistence(False, 'appendonly no and no RDB save points (save "")')


def from_info(info: Mapping[str, Any]) -> Persistence:
    """From ``INFO persistence``, when CONFIG is not allowed: AOF on is a yes; anything else
    is unknown, because INFO does not show whether RDB snapshots are configured."""
    if str(info.get("aof_enabled", "0")) == "1":
        return Persistence(True, "AOF (aof_enabled:1 in INFO persistence)")
    rdb = f"rdb_saves:{info['rdb_saves']}" if "rdb_saves" in info else "no rdb_saves"
    return Persistence(
        None,
        f"CONFIG is not allowed; INFO persistence shows aof_enabled:0 and {rdb}, which "
        "cannot tell whether RDB snapshots are configured",
    )


async def inspect(client: Redis) -> Persistence:
    """Ask Redis; never raises for a Redis that refuses or does not answer."""
    try:
        try:
            appendonly = await client.config_get("appendonly")
            save = await client.config_get("save")
        except ResponseError:  # CONFIG renamed away or not permitted (managed Redis)
            return from_info(await client.info("persistence"))
    except ResponseError as exc:
        return Persistence(None, f"neither CONFIG GET nor INFO persistence is allowed ({exc})")
    except REDIS_DOWN as exc:
        return Persistence(None, f"Redis did not answer ({type(exc).__name__})")
    return from_config(appendonly.get("appendonly", ""), save.get("save", ""))


def losses() -> str:
    return "; ".join(LOST_ON_RESTART)


async def check_persistence(handle: RedisHandle, required: bool) -> Persistence | None:
    """Log what a Redis restart would lose; with ``required`` (redis.require_persistence),
    raise :class:`ConfigError` unless Redis is known to persist. The embedded Redis already
    warned that it keeps nothing, so it is not warned about again."""
    if handle.embedded:
        if required:
            raise ConfigError(
                "redis.require_persistence is true, but REDIS_URL is not set: the embedded "
                "Redis keeps nothing after the process stops. Set REDIS_URL to a Redis that "
                "persists (appendonly yes), or set redis.require_persistence: false."
            )
        return None
    found = await inspect(handle.client)
    if found.persists:
        log.info("Redis keeps its data across a restart: %s", found.how)
    elif required:
        state = (
            f"keeps nothing on disk ({found.how})"
            if found.persists is False
            else f"may keep nothing on disk, and that could not be checked ({found.how})"
        )
        raise ConfigError(
            f"redis.require_persistence is true, but the Redis at REDIS_URL {state}. A Redis "
            f"restart would lose: {losses()}. To fix it, {ADVICE}; or set "
            "redis.require_persistence: false to start anyway."
        )
    elif found.persists is False:
        log.warning(
            "Redis keeps nothing on disk (%s): a Redis restart loses %s. To keep them, %s.",
            found.how,
            losses(),
            ADVICE,
        )
    else:
        log.info(
            "could not tell whether Redis keeps its data across a restart (%s); if it does "
            "not, a restart loses %s",
            found.how,
            losses(),
        )
    return found
