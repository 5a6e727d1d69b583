"""A stdio server's stderr, logged line by line under the server's name.

The program writes to a pipe; each line becomes one log record ``NAME: line`` on the
``tools.mcp.server`` logger. While the server keeps failing to start (``quiet``), its
lines go to DEBUG, so a crashing server's traceback is logged once per outage, not once
per retry. The last lines are kept to say why it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import AsyncIterator
from typing import TextIO

import anyio

server_log = logging.getLogger("tools.mcp.server")

LINE_CHARS = 2000
KEEP_LINES = 5
DRAIN_S = 0.5  # after the program exits, how long its last lines may take to arrive


class ServerStderr:
    def __init__(self, name: str) -> None:
        self.name = name
        self.quiet = False
        self.last_lines: deque[str] = deque(maxlen=KEEP_LINES)

    def line(self, text: str) -> None:
        text = shortened(text.rstrip())
        if not text:
            return
        self.last_lines.append(text)
        level = logging.DEBUG if self.quiet else logging.INFO
        server_log.log(level, "%s: %s", self.name, text)

    def last_words(self) -> str:
        """The last line it wrote, if any (often the error that stopped it)."""
        return self.last_lines[-1] if self.last_lines else ""

    @contextlib.asynccontextmanager
    async def pipe(self) -> AsyncIterator[TextIO]:
        """A file to give the program as its stderr. Close it once the program started:
        the lines are read until every copy of it is closed (the program exited)."""
        read_fd, write_fd = os.pipe()
        writer = os.fdopen(write_fd, "w")
        reader = os.fdopen(read_fd, "rb", buffering=0)
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), reader
        )
        pump = asyncio.create_task(self._pump(stream), name=f"mcp-{self.name}-stderr")
        try:
            yield writer
        finally:
            writer.close()
            with anyio.move_on_after(DRAIN_S, shield=True):
                await asyncio.wait([pump])
            pump.cancel()
            transport.close()

    async def _pump(self, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                raw = await stream.readline()
            except ValueError:  # a line longer than the stream's limit
                raw = await stream.read(64 * 1024)
            if not raw:
                return
            self.line(raw.decode("utf-8", errors="replace"))


def shortened(text: str) -> str:
    """``text`` cut to about :data:`LINE_CHARS`, between words: a word (a token, a
    ``--token=…`` argument) is shown whole or not at all, so the log's redaction of secrets
    (bot/observability/redaction.py) never meets half of one."""
    if len(text) <= LINE_CHARS:
        return text
    cut = max(text.rfind(space, 0, LINE_CHARS + 1) for space in " \t")
    kept = text[:cut].rstrip() if cut > 0 else ""
    return f"{kept} … ({len(text) - len(kept)} more characters)".lstrip()
