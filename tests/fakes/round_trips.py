"""Redis round trips counted where redis-py sends: each command, or each pipeline, is one
write of packed bytes on a connection (``Connection.send_packed_command``)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from redis.asyncio.connection import Connection


@dataclass
class RoundTrips:
    sent: int = 0


_counting: contextvars.ContextVar[RoundTrips | None] = contextvars.ContextVar(
    "counting", default=None
)


@contextmanager
def counting_round_trips() -> Iterator[RoundTrips]:
    """Counts the sends made in the block, and in tasks it starts: not those of tasks that
    were already running (a worker's polling, a watcher)."""
    trips = RoundTrips()
    original = Connection.send_packed_command

    async def counted(self: Connection, command: Any, check_health: bool = True) -> None:
        if _counting.get() is trips:
            trips.sent += 1
        await original(self, command, check_health)

    token = _counting.set(trips)
    Connection.send_packed_command = counted  # type: ignore[method-assign,assignment]
    try:
        yield trips
    finally:
        Connection.send_packed_command = original  # type: ignore[method-assign]
        _counting.reset(token)
