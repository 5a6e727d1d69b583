"""Which processes a process started, and whether a process still runs, read from /proc
(Linux), for tests of the supervisor and its worker processes."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PROC = Path("/proc")


def _stat(pid: int) -> tuple[str, int] | None:
    """The state letter and the parent's pid of ``pid``, or None when it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def children_of(parent: int) -> list[int]:
    """The live processes whose parent is ``parent``."""
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None and stat[1] == parent and stat[0] not in "ZX":
            found.append(int(entry.name))
    return sorted(found)


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (dead, not yet reaped by its parent)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in "ZX"


def kill_all(pids: list[int], sig: int) -> None:
    """Send ``sig`` to each of ``pids`` that still exists."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
