"""When a worker process that died is started again (pure): soon after one that had been
running steadily, later and later (doubling, up to a cap) while each new one dies young, so a
worker that crashes at start-up never spins."""

from __future__ import annotations

from dataclasses import dataclass

FIRST_S = 0.5
MAX_S = 30.0
STEADY_S = 30.0


@dataclass
class RestartBackoff:
    """One worker slot's restart delays. ``steady_s``: a process that ran at least this long
    had started well, and its death starts the backoff again from ``first_s``."""

    first_s: float = FIRST_S
    max_s: float = MAX_S
    steady_s: float = STEADY_S
    failures: int = 0  # deaths in a row, each of a process younger than steady_s

    def after_exit(self, ran_for_s: float) -> float:
        """The seconds to wait before starting the next process, after one that ran for
        ``ran_for_s`` seconds died."""
        if ran_for_s >= self.steady_s:
            self.failures = 0
        self.failures += 1
        return min(self.max_s, self.first_s * 2.0 ** (self.failures - 1))
