"""CPU time of a process and every process below it, read from /proc (Linux).

A sample sums, for the root and each live descendant, its own CPU time (the scheduler's
nanoseconds for each of its threads, /proc/PID/task/TID/schedstat; else user + system time
in clock ticks) and the time of the children it has already waited for (cutime + cstime,
in ticks), so a worker process that exits between two samples still counts once its parent
reaps it.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def _fields(pid: int) -> list[str] | None:
    """/proc/PID/stat from its third field (state) on."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name is in parentheses and may hold spaces: split after its last ")".
    return raw[raw.rindex(")") + 2 :].split()


def _parents() -> dict[int, int]:
    """Every live process's parent."""
    parents = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _fields(int(entry.name))
            if fields is not None:
                parents[int(entry.name)] = int(fields[1])  # field 4: ppid
    return parents


def _tree(root: int) -> list[int]:
    """``root`` and its live descendants."""
    children: dict[int, list[int]] = {}
    parents = _parents()
    if root not in parents:
        raise ProcessLookupError(root)
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, ()))
    return tree


def _seconds(pid: int) -> float:
    """A process's own CPU time and its reaped children's (0 once it is gone)."""
    fields = _fields(pid)
    if fields is None:
        return 0.0
    # cutime, cstime: fields 16 and 17
    return own_cpu_seconds(pid, fields) + (int(fields[13]) + int(fields[14])) / TICKS_PER_SECOND


def _threads_seconds(pid: int) -> float | None:
    """The scheduler's CPU time of every thread of ``pid``, or None when it keeps none."""
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
        nanoseconds = sum(int((task / "schedstat").read_text().split()[0]) for task in tasks)
    except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError, ValueError):
        return None
    return nanoseconds / 1e9


def own_cpu_seconds(pid: int, fields: list[str] | None = None) -> float:
    """CPU seconds used so far by ``pid`` itself (its threads), not by its children; 0 once
    it is gone. ``fields``: its /proc/PID/stat, when already read."""
    own = _threads_seconds(pid)
    if own is not None:
        return own
    fields = fields or _fields(pid)
    # utime, stime: fields 14 and 15
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and all its descendants (live or reaped)."""
    return sum(_seconds(pid) for pid in _tree(root))


def tree_size(root: int) -> int:
    """How many live processes ``root``'s tree has (itself included)."""
    return len(_tree(root))


def tree_rss_bytes(root: int) -> list[int]:
    """The resident memory (VmRSS) of each live process of ``root``'s tree, in bytes."""
    sizes = []
    for pid in _tree(root):
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        sizes.append(int(line.split()[1]) * 1024)
        except OSError:
            continue
    return sizes
