"""A tool that takes as long as it is asked to, for the Stop button tests."""

from __future__ import annotations

import asyncio

from tools import tool

CANCELLED: list[float] = []


@tool
async def wait_a_while(seconds: float) -> str:
    """Wait, then report.

    Args:
        seconds: How long to wait.
    """
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        CANCELLED.append(seconds)
        raise
    return f"waited {seconds} s"
