"""A tool with a fixed latency (BENCH_TOOL_MS), loaded by the app under benchmark."""

from __future__ import annotations

import asyncio
import os

from tools import tool


@tool
async def slow_lookup(item: str) -> str:
    """Look something up slowly.

    Args:
        item: What to look up.
    """
    await asyncio.sleep(int(os.environ.get("BENCH_TOOL_MS", "300")) / 1000)
    return f"{item}: 12 in stock"
