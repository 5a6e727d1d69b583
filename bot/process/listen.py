"""Where a process listens, and the socket Slack's events arrive on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web

from bot.slack.inbound.front_door import FrontDoor, ShortAnswer

# Connections the kernel completes and holds for the app while its event loop is busy with
# others. Slack opens a new connection for each event; with aiohttp's default of 128, the
# connections of a burst beyond it had their SYN dropped and waited for TCP to send it again
# a second later (benchmarks/ack_floor.py: ack p99 about 1,030 ms for 200 at once, 74-105 ms
# with this). The kernel caps it at net.core.somaxconn.
EVENTS_BACKLOG = 2048


@dataclass(frozen=True)
class Listen:
    """The app's host and port (HTTP mode: Slack's events, /healthz and /readyz; Socket
    Mode: the endpoints, /metrics included), and ``metrics_port`` for the endpoints on a
    listener of their own (HTTP mode: the only one with /metrics)."""

    host: str = "0.0.0.0"
    port: int = 3000
    metrics_port: int | None = None


# How long a request being answered when the port closes has to finish (an enqueue gives up
# after 2 s: bot/slack/inbound/ingress.py).
CLOSE_TIMEOUT_S = 10.0


class EventsPort:
    """Slack's events port (HTTP mode): the front door (bot/slack/inbound/front_door.py)
    takes every connection, answers message events itself, and hands the rest to ``app``
    (bot/slack/inbound/http.py), on the same port."""

    def __init__(self, app: web.Application, answer: ShortAnswer) -> None:
        self.runner = web.AppRunner(app, access_log=None)
        self.answer = answer
        self.door: FrontDoor | None = None
        self.server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> None:
        """Listen on ``host``:``port`` (0: a free port, see :attr:`port`), with room for a
        burst of new connections (:data:`EVENTS_BACKLOG`)."""
        await self.runner.setup()
        fallback = self.runner.server
        assert fallback is not None  # set up
        self.door = FrontDoor(self.answer, fallback)
        self.server = await asyncio.get_running_loop().create_server(
            self.door, host, port, backlog=EVENTS_BACKLOG
        )

    @property
    def port(self) -> int:
        assert self.server is not None, "not started"
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def stop(self) -> None:
        """Take no new connection; finish the answers under way; close every connection."""
        if self.server is not None:
            self.server.close()
        if self.door is not None:
            await self.door.close(CLOSE_TIMEOUT_S)
        if self.runner.server is not None:  # set up
            await self.runner.cleanup()
