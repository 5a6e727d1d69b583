"""A tool that holds its process's event loop (a CPU-bound step that never awaits), for the
tests that show acks do not wait for turn work in other processes.

It touches the file named by ``LOOP_HOG_MARKER`` when it starts holding the loop."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tools import tool


@tool
async def hold_the_loop(seconds: float) -> str:
    """Keep this process busy, never yielding, then report.

    Args:
        seconds: How long to hold the loop.
    """
    Path(os.environ["LOOP_HOG_MARKER"]).touch()  # noqa: ASYNC240
    time.sleep(seconds)  # noqa: ASYNC251 (on purpose: nothing else in this process runs)
    return f"held the loop {seconds} s"
