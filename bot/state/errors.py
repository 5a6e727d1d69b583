"""Redis failures as one typed error the callers can act on."""

from __future__ import annotations

import redis.exceptions

# What a Redis outage looks like from redis-py: refused or dropped connections, timeouts.
REDIS_DOWN: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    ConnectionError,
    TimeoutError,
    OSError,
)


class StateUnavailable(Exception):
    """Redis cannot be reached. The Slack layer refuses the ack so Slack redelivers."""
