"""A deadline that never runs out, for tests of the Slack side without a lease."""

from __future__ import annotations

import contextlib
import math
from contextlib import AbstractAsyncContextManager


class NoDeadline:
    """Every call may take as long as it likes (bot.turn.ports.Deadline)."""

    def time_left(self) -> float:
        return math.inf

    def bounded(self, what: str) -> AbstractAsyncContextManager[None]:
        return contextlib.nullcontext()
