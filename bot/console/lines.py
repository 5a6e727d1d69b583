"""Lines typed at the console, read one at a time in a thread.

Prompts, confirmations and questions all read through one reader, so a read that was given
up on (a question that timed out) never leaves a second reader behind: its line goes to the
next one who asks.
"""

from __future__ import annotations

import asyncio
from typing import TextIO


class LineReader:
    def __init__(self, stdin: TextIO) -> None:
        self.stdin = stdin
        self._pending: asyncio.Future[str] | None = None

    async def readline(self, timeout_s: float | None = None) -> str:
        """The next line ("" at the end of input); TimeoutError after ``timeout_s``."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(asyncio.to_thread(self.stdin.readline))
        pending = self._pending
        if timeout_s is None:
            line = await asyncio.shield(pending)
        else:
            line = await asyncio.wait_for(asyncio.shield(pending), timeout_s)
        self._pending = None
        return line
