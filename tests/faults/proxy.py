"""A TCP proxy between one replica and Redis that the test controls, to partition them the
way a cloud network does: packets silently lost, no RST, no FIN.

- :meth:`CutProxy.cut`: from now on, bytes are dropped both ways. Connections stay open and
  new ones are accepted (the SYN got through before the cut, say), but nothing arrives.
- :meth:`CutProxy.heal`: every connection that was open during the cut is reset (as the
  peers' TCP stacks do when they find each other again after their state timed out), and
  traffic passes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from dataclasses import dataclass, field

CHUNK = 65536


@dataclass(eq=False)
class _Link:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    cut: bool = False  # lived through a cut: reset at the heal
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class CutProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.cut_since: float | None = None  # time.monotonic() of the cut, while it lasts
        self.dropped_bytes = 0
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            self._close(link, reset=True)
        tasks = [task for link in self._links for task in link.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._links.clear()

    def cut(self) -> float:
        """Drop everything from now on; returns when (monotonic)."""
        self.cut_since = time.monotonic()
        for link in self._links:
            link.cut = True
        return self.cut_since

    def heal(self) -> float:
        """Reset every connection that lived through the cut, then let traffic pass;
        returns when (monotonic)."""
        for link in [link for link in self._links if link.cut]:
            self._close(link, reset=True)
        self.cut_since = None
        return time.monotonic()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            self._close_writer(writer, reset=True)
            return
        link = _Link(writer, up_writer, cut=self.cut_since is not None)
        self._links.add(link)
        link.tasks = [
            asyncio.create_task(self._pump(link, reader, up_writer)),
            asyncio.create_task(self._pump(link, up_reader, writer)),
        ]

    async def _pump(
        self, link: _Link, source: asyncio.StreamReader, sink: asyncio.StreamWriter
    ) -> None:
        try:
            while data := await source.read(CHUNK):
                if link.cut or self.cut_since is not None:
                    link.cut = True
                    self.dropped_bytes += len(data)  # lost on the way
                    continue
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._close(link, reset=link.cut)

    def _close(self, link: _Link, *, reset: bool) -> None:
        self._links.discard(link)
        self._close_writer(link.client, reset=reset)
        self._close_writer(link.upstream, reset=reset)

    @staticmethod
    def _close_writer(writer: asyncio.StreamWriter, *, reset: bool) -> None:
        if reset:
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):  # close sends RST, not FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()  # at once, unflushed
            return
        with contextlib.suppress(Exception):
            writer.close()
