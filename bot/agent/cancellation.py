"""Cancel-or-finish: run some work unless an event fires first.

One helper for every race in the service: a model call against the Stop button, a round of
tools against the Stop button, a whole turn against losing the thread's lock or a shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Final, TypeVar

T = TypeVar("T")


class Interrupted:
    """The work was cancelled because an event fired before it finished."""

    def __repr__(self) -> str:
        return "INTERRUPTED"


INTERRUPTED: Final = Interrupted()


async def unless(work: Awaitable[T], *events: asyncio.Event | None) -> T | Interrupted:
    """Await ``work``; if any of ``events`` is set first, cancel the work (and wait until it
    has unwound) and return :data:`INTERRUPTED`. Work that finished at the same moment
    keeps its result. Cancelling the caller cancels the work too."""
    watched = [event for event in events if event is not None]
    future = asyncio.ensure_future(work)
    if not watched:
        return await future
    if any(event.is_set() for event in watched):
        await _cancel(future)
        return INTERRUPTED
    waiters = [asyncio.ensure_future(event.wait()) for event in watched]
    try:
        await asyncio.wait([future, *waiters], return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _cancel(future)
        raise
    finally:
        for waiter in waiters:
            waiter.cancel()
    if future.done():
        return future.result()
    await _cancel(future)
    return INTERRUPTED


async def sleep_unless(seconds: float, *events: asyncio.Event | None) -> bool:
    """Sleep ``seconds``; return False at once (True after the sleep) if an event fires."""
    return not isinstance(await unless(asyncio.sleep(seconds), *events), Interrupted)


async def _cancel(future: asyncio.Future[Any]) -> None:
    future.cancel()
    await asyncio.gather(future, return_exceptions=True)
