"""The event loop ``run`` and ``worker`` serve on: uvloop (libuv's loop, written in C) where
it is installed, else asyncio's own.

A burst of Slack's requests is accepted, read, answered and closed one after another on
one loop; asyncio's selector loop and transports, in Python, spent about a third of the
ingress's CPU on that (py-spy over a burst of 200 mentions). uvloop does the same work in C.
``SLACK_AGENT_EVENT_LOOP=asyncio`` keeps asyncio's loop (to compare, or to rule uvloop out).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from bot.config import ConfigError

T = TypeVar("T")

VARIABLE = "SLACK_AGENT_EVENT_LOOP"


def loop_factory(choice: str | None = None) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory, or None for asyncio's loop (``choice``: ``uvloop``, the
    default, or ``asyncio``; from SLACK_AGENT_EVENT_LOOP when not given)."""
    choice = (choice if choice is not None else os.environ.get(VARIABLE, "")).strip().lower()
    if choice == "asyncio":
        return None
    if choice not in ("", "uvloop"):
        raise ConfigError(f"{VARIABLE}: {choice!r} is neither uvloop nor asyncio")
    try:
        import uvloop
    except ImportError:  # not installed (Windows has none): asyncio's loop does the same
        return None
    return uvloop.new_event_loop


def serve(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to the end on the chosen loop, as ``asyncio.run`` does (a bad
    SLACK_AGENT_EVENT_LOOP is a :class:`ConfigError` before ``main`` starts)."""
    try:
        factory = loop_factory()
    except ConfigError:
        main.close()
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
