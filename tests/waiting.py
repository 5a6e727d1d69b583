"""Waiting in tests for something to happen, with a deadline instead of a fixed sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

POLL_S = 0.02


async def until(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Return once ``condition()`` holds; fail the test after ``timeout`` seconds."""
    try:
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(POLL_S)
    except TimeoutError:
        raise AssertionError(f"condition not met within {timeout} s") from None


async def until_true(condition: Callable[[], Awaitable[bool]], timeout: float = 15.0) -> None:
    """Like :func:`until` for a condition that must query something."""
    try:
        async with asyncio.timeout(timeout):
            while not await condition():
                await asyncio.sleep(POLL_S)
    except TimeoutError:
        raise AssertionError(f"condition not met within {timeout} s") from None
