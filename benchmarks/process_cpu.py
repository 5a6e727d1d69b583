"""CPU time of a process and every process below it, read from /proc (Linux).

A sample sums, for the root and each live descendant, its own user + system time and the
time of the children it has already waited for (cutime + cstime), so a worker process that
exits between two samples still counts once its parent reaps it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class _Stat:
    pid: int
    parent: int
    ticks: int  # utime + stime + cutime + cstime


def _stat(pid: int) -> _Stat | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name is in parentheses and may hold spaces: split after its last ")".
    fields = raw[raw.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state): ppid is field 4, utime..cstime are fields 14..17.
    return _Stat(pid, int(fields[1]), sum(int(f) for f in fields[11:15]))


def _all_stats() -> list[_Stat]:
    stats = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                stats.append(stat)
    return stats


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and all its descendants (live or reaped)."""
    children: dict[int, list[_Stat]] = {}
    by_pid: dict[int, _Stat] = {}
    for stat in _all_stats():
        by_pid[stat.pid] = stat
        children.setdefault(stat.parent, []).append(stat)
    if root not in by_pid:
        raise ProcessLookupError(root)
    total, pending = 0, [by_pid[root]]
    while pending:
        stat = pending.pop()
        total += stat.ticks
        pending.extend(children.get(stat.pid, ()))
    return total / TICKS_PER_SECOND


def tree_size(root: int) -> int:
    """How many live processes ``root``'s tree has (itself included)."""
    children: dict[int, list[int]] = {}
    for stat in _all_stats():
        children.setdefault(stat.parent, []).append(stat.pid)
    count, pending = 0, [root]
    while pending:
        pid = pending.pop()
        count += 1
        pending.extend(children.get(pid, ()))
    return count
