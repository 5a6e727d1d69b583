"""The app's Redis round trips by command, read from its processes (see sitecustomize.py)."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import time
from pathlib import Path

FOLDER = Path(__file__).parent


def environment(folder: Path) -> dict[str, str]:
    """What the app's environment needs for its processes to count into ``folder``."""
    path = os.environ.get("PYTHONPATH")
    return {
        "BENCH_REDIS_SENDS": str(folder),
        "PYTHONPATH": str(FOLDER) + (os.pathsep + path if path else ""),
    }


async def snapshot(folder: Path, timeout_s: float = 10.0) -> collections.Counter[str]:
    """Every counting process's sends so far, summed (a process that has exited is left
    out)."""
    asked = _ask(folder)
    deadline = time.monotonic() + timeout_s
    while not _reported(folder, asked):
        if time.monotonic() > deadline:
            raise RuntimeError("an app process did not report its Redis sends")
        await asyncio.sleep(0.02)
    total: collections.Counter[str] = collections.Counter()
    for pid in asked:
        total.update(json.loads((folder / f"{pid}.json").read_text()))
    return total


def _ask(folder: Path) -> list[int]:
    """Signal every counting process that is still alive; returns those signalled."""
    asked = []
    for ready in folder.glob("*.ready"):
        pid = int(ready.stem)
        (folder / f"{pid}.json").unlink(missing_ok=True)
        try:
            os.kill(pid, signal.SIGUSR2)
        except ProcessLookupError:
            continue
        asked.append(pid)
    return asked


def _reported(folder: Path, pids: list[int]) -> bool:
    return all((folder / f"{pid}.json").exists() for pid in pids)
