"""The event loop of the long-running processes (`slack-agent run` and `worker`): uvloop's
where it is installed (every platform but Windows), else asyncio's own.

An ack's CPU is mostly the event loop's own work: accepting a connection, reading it,
writing the answer, closing it. uvloop does that work in C; in a burst of 200 mentions it
cut the ingress's CPU per ack by about a quarter (docs/benchmarks.md). The short commands
(`chat`, `check`, `tools`) keep asyncio's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop maker, or None (asyncio's) where uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_service(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on :func:`loop_factory`'s loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
