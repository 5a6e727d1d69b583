"""Slack's events port before aiohttp: the connections that carry Slack's events.

In a burst of events, aiohttp's machinery for each request (its protocol's task per
connection, the request and response objects, the router, the payload stream) was more
than half of the ingress's CPU per ack (docs/benchmarks.md), and the burst's acks wait for
all of it. Most of what Slack sends is ``POST /slack/events`` with a message event, which
needs none of it: the body, three headers, and a status to write back.

:class:`FrontDoor` is the protocol factory of the events port. Each :class:`Connection`
reads the bytes that arrive and, for a plain ``POST /slack/events`` (its head as
bot/slack/inbound/request_head.py reads it, a body of at most 1 MiB), awaits the short
answer (bot/slack/inbound/http.py: 401 unsigned, or the answer to a message event) and
writes it. Requests are answered one at a time and in order; HTTP/1.1 keep-alive holds.

Every other request (/healthz, /readyz, commands, interactions, a request the short way
does not answer, a head it does not read, a body over 1 MiB) goes to aiohttp: the
connection is handed, with the bytes read and not answered yet, to a protocol of aiohttp's
server (``fallback``), which owns it from then on and answers as it always did.

A connection that brings no whole request within ``request_timeout_s`` of opening or of its
last answer is closed (aiohttp's keep-alive timeout; here a request trickled in byte by byte
does not reset it).

The door holds at most ``max_connections`` connections (:func:`connection_cap`: 1,024, or
half the files the process may open). One more closes, of those with no answer under way
(kept alive, or still bringing their request), the one whose last answer or opening is
oldest: connections opened and left idle, or trickled byte by byte, cannot take the port
from Slack. When every one is being answered, the newcomer is closed instead (Slack sends
the event again). A warning counts them, at most once a minute. Connections handed to
aiohttp are its server's, and not counted.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from slack_bolt.response import BoltResponse

from bot.slack.inbound.request_head import (
    EVENTS_REQUEST_LINE,
    MAX_BODY,
    MAX_HEAD,
    Answers,
    Head,
    head_end,
    media_type,
    read_head,
)

log = logging.getLogger(__name__)

ShortAnswer = Callable[[bytes, Mapping[str, str]], Awaitable[BoltResponse | None]]

REQUEST_TIMEOUT_S = 75.0  # aiohttp's keep-alive timeout
MAX_CONNECTIONS = 1024  # a burst of Slack's events, with room
SHED_WARN_EVERY_S = 60.0


class FrontDoor:
    def __init__(
        self,
        answer: ShortAnswer,
        fallback: Callable[[], asyncio.Protocol],
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        max_connections: int | None = None,
    ) -> None:
        """``answer``: the short answer to a request's body and headers (names in lower
        case), or None for aiohttp to answer it; ``fallback``: a new protocol of aiohttp's
        server (``web.Server``), for a connection handed on."""
        self.answer = answer
        self.fallback = fallback
        self.request_timeout_s = request_timeout_s
        self.max_connections = connection_cap() if max_connections is None else max_connections
        self.answers = Answers()
        self.connections: dict[Connection, None] = {}  # the least recently answered first
        self.closing = False
        self.loop = asyncio.get_running_loop()
        self.shed = 0  # connections closed or refused for room, not warned of yet
        self.warned_at: float | None = None
        self.warn_every_s = SHED_WARN_EVERY_S
        self.pending_warning: asyncio.TimerHandle | None = None

    def __call__(self) -> Connection:
        return Connection(self)

    def admit(self, connection: Connection) -> bool:
        """Make room for ``connection`` when the door is full: close the least recently
        answered connection with no answer under way. False (the newcomer is to be closed)
        when every one is being answered."""
        if len(self.connections) >= self.max_connections:
            idle = next((c for c in self.connections if c.task is None and c.open()), None)
            self._shed()
            if idle is None:
                return False
            idle.close()
            del self.connections[idle]
        self.connections[connection] = None
        return True

    def answered(self, connection: Connection) -> None:
        """``connection`` was just answered and stays open: the last to be closed for room."""
        if connection in self.connections:
            del self.connections[connection]
            self.connections[connection] = None

    def _shed(self) -> None:
        """Count one connection closed or refused for room: warned of at once, or with the
        others of the minute when its warning is due."""
        self.shed += 1
        if self.pending_warning is not None:
            return
        due = 0.0 if self.warned_at is None else self.warned_at + self.warn_every_s
        if due <= self.loop.time():
            self._warn()
        else:
            self.pending_warning = self.loop.call_at(due, self._warn)

    def _warn(self) -> None:
        self.pending_warning = None
        if self.shed:
            log.warning(
                "the events port holds its most connections (%d): %d closed or refused for "
                "room (connections left idle or trickling, or more events at once than it "
                "holds)",
                self.max_connections,
                self.shed,
            )
        self.warned_at, self.shed = self.loop.time(), 0

    async def close(self, timeout_s: float) -> None:
        """Close idle connections at once; a request being answered is answered (with
        ``Connection: close``) for up to ``timeout_s``, then its connection is dropped.
        Connections handed to aiohttp are its server's to close."""
        self.closing = True
        if self.pending_warning is not None:
            self.pending_warning.cancel()
            self._warn()  # what the minute counted so far
        answering = []
        for connection in list(self.connections):
            if connection.task is None:
                connection.close()
            else:
                answering.append(connection.task)
        if answering:
            await asyncio.wait(answering, timeout=timeout_s)
        for connection in list(self.connections):
            connection.close()


def connection_cap(files: int | None = None) -> int:
    """:data:`MAX_CONNECTIONS`, or half the files this process may open when that is less
    (``files``: RLIMIT_NOFILE's soft limit), so the cap is reached before the limit: Redis,
    Slack, the model and the MCP servers need files too."""
    if files is None:
        files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if files == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(min(MAX_CONNECTIONS, files // 2), 1)


class Connection(asyncio.Protocol):
    def __init__(self, door: FrontDoor) -> None:
        self.door = door
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.task: asyncio.Task[None] | None = None
        self.eof = False
        self.paused = False
        self.deadline: asyncio.TimerHandle | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        if not self.door.admit(self):
            self.transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._transport().is_closing():
            return  # closed by the door (for room, or stopping): nothing more is read
        self.buffer += data
        if self.task is None:
            self._next()
        elif len(self.buffer) > MAX_HEAD + MAX_BODY and not self.paused:
            # a client that sends on while its request is answered: wait for the answer
            self.paused = True
            self._transport().pause_reading()

    def eof_received(self) -> bool:
        self.eof = True
        if self.task is None:
            self._next()
        return True  # the answer to a whole request can still be written; then we close

    def connection_lost(self, exc: Exception | None) -> None:
        self.door.connections.pop(self, None)
        self._disarm()

    # the requests

    def open(self) -> bool:
        """Connected, and not closing."""
        return self.transport is not None and not self.transport.is_closing()

    def close(self) -> None:
        self._disarm()
        if self.transport is not None:
            self.transport.close()

    def _next(self) -> None:
        """Answer the next whole request in the buffer, hand the connection to aiohttp,
        or wait for more bytes."""
        buffer = self.buffer
        if not buffer:
            if self.eof or self.door.closing:
                self.close()
            return
        line = EVENTS_REQUEST_LINE
        if not (buffer.startswith(line) if len(buffer) >= len(line) else line.startswith(buffer)):
            self._hand_over()
            return
        end = head_end(buffer)
        if end < 0:
            bare_lf = buffer.count(b"\n") != buffer.count(b"\r\n")
            if self.eof or bare_lf or len(buffer) > MAX_HEAD:
                self._hand_over()
            return
        head = read_head(bytes(buffer[:end]))
        if head is None or head.body_length > MAX_BODY:
            self._hand_over()
            return
        size = end + 4 + head.body_length
        if len(buffer) < size:
            if self.eof:
                self._hand_over()  # aiohttp says what an incomplete body gets
            return
        request = bytes(buffer[:size])
        del buffer[:size]
        self._disarm()
        self.task = self.door.loop.create_task(self._answer(head, request, end + 4))

    async def _answer(self, head: Head, request: bytes, body_at: int) -> None:
        try:
            reply = await self.door.answer(request[body_at:], head.headers)
        except Exception:  # the short answer catches its own; this is a last resort
            log.exception("handling a Slack request failed")
            reply = BoltResponse(status=500, body="")
        self.task = None
        if reply is None:  # aiohttp answers it, and whatever follows on this connection
            self.buffer[0:0] = request
            self._hand_over()
            return
        transport = self._transport()
        if transport.is_closing():  # the client is gone; what the answer did stays done
            return
        keep_alive = head.keep_alive and not self.door.closing
        content_type = media_type(reply.headers.get("content-type", ["text/plain"])[0])
        transport.write(
            self.door.answers.render(
                reply.status, reply.body, keep_alive=keep_alive, content_type=content_type
            )
        )
        if not keep_alive:
            self.close()
            return
        self.door.answered(self)
        if self.paused:
            self.paused = False
            transport.resume_reading()
        self._arm()
        self._next()

    def _hand_over(self) -> None:
        """This connection is aiohttp's from now on, with the bytes not answered yet."""
        self._disarm()
        self.door.connections.pop(self, None)
        transport = self._transport()
        if transport.is_closing():
            return
        protocol = self.door.fallback()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if self.buffer:
            data, self.buffer = bytes(self.buffer), bytearray()
            protocol.data_received(data)
        if self.paused:
            self.paused = False
            transport.resume_reading()

    def _arm(self) -> None:
        self._disarm()
        self.deadline = self.door.loop.call_later(self.door.request_timeout_s, self._time_out)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _time_out(self) -> None:
        self.deadline = None
        if self.task is None:
            self.close()

    def _transport(self) -> asyncio.Transport:
        assert self.transport is not None, "not connected"
        return self.transport
