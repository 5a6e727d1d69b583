"""Slack opens a connection per event: a burst of new connections while the app's event loop
is busy is taken by the kernel at once, not dropped for TCP to send again a second later."""

from __future__ import annotations

import asyncio
import select
import socket
import threading
import time
from collections.abc import Iterator, Mapping

import pytest
from aiohttp import web

from bot.process.listen import EventsPort
from tests.fakes.redis_server import free_port

BURST = 300  # more than aiohttp's default backlog (128)


async def no_short_answer(raw: bytes, headers: Mapping[str, str]) -> None:
    return None


class BusyServer:
    """The events listener in a thread of its own, whose event loop is then held (as a
    busy app's would be) until :meth:`release`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.held = threading.Event()
        self.released = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        port = EventsPort(web.Application(), no_short_answer)
        await port.start("127.0.0.1", self.port)
        self.held.set()
        self.released.wait(30)  # the loop accepts nothing meanwhile
        await port.stop()

    def release(self) -> None:
        self.released.set()
        self.thread.join(10)


@pytest.fixture
def busy_server() -> Iterator[BusyServer]:
    server = BusyServer(free_port())
    server.thread.start()
    assert server.held.wait(10)
    yield server
    server.release()


def connected_within(sockets: list[socket.socket], seconds: float) -> int:
    """How many of ``sockets`` (connecting, non-blocking) finish their handshake in time."""
    pending, done = {s.fileno(): s for s in sockets}, 0
    deadline = time.monotonic() + seconds
    while pending and time.monotonic() < deadline:
        _, writable, _ = select.select([], list(pending), [], deadline - time.monotonic())
        for fd in writable:
            if pending.pop(fd).getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                done += 1
    return done


def test_a_burst_of_new_connections_is_held_while_the_app_is_busy(
    busy_server: BusyServer,
) -> None:
    sockets = [socket.socket() for _ in range(BURST)]
    try:
        for s in sockets:
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", busy_server.port))
        # With a backlog of 128 about 129 finish; the rest wait a second for their SYN to be
        # sent again (and again while the loop stays busy).
        assert connected_within(sockets, 0.9) == BURST
    finally:
        for s in sockets:
            s.close()
