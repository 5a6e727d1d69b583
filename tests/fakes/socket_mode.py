"""A fake Slack Socket Mode server on loopback, speaking Slack's documented protocol.

``apps.connections.open`` on the fake Web API (:class:`FakeSlack`) returns a ``ws://`` URL
here; a connection gets ``hello``, then envelopes ``{envelope_id, type: events_api, payload,
accepts_response_payload, retry_attempt, retry_reason}``; the app acks with
``{envelope_id}``. Like Slack, an envelope whose connection ends before its ack is sent
again (``retry_attempt`` + 1) on another open connection, or on the next one to open.

Faults, from the test: :meth:`drop` (a close frame), :meth:`reset` (the TCP connection
aborted, no close frame), :meth:`silence` (no pong, no envelope: only the client's pings can
tell), :meth:`refresh` (a ``disconnect`` message with reason
``refresh_requested``, ``warning`` or ``link_disabled``, then the server closes the
connection ``close_after_s`` later, as Slack does).

Everything is recorded with monotonic times: when each connection opened and closed, each
envelope's first send and its ack, so a test can measure the longest unacked time and the
gap a refresh left.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.slack_server import FakeSlack


@dataclass
class Connection:
    number: int
    ws: web.WebSocketResponse
    request: web.Request
    opened_at: float
    closed_at: float | None = None
    disconnect_sent: str = ""  # the reason of the disconnect message sent on it, if any
    disconnect_at: float | None = None
    silent: bool = False  # answers no ping and gets no envelope (a network black hole)
    silenced_at: float | None = None

    @property
    def open(self) -> bool:
        return self.closed_at is None


@dataclass
class Envelope:
    envelope_id: str
    payload: dict[str, Any]
    created_at: float
    sent_on: list[int] = field(default_factory=list)  # connection numbers, in order
    acked_at: float | None = None

    @property
    def waited_s(self) -> float:
        """How long it went unacked (until now, if it still is)."""
        end = self.acked_at if self.acked_at is not None else time.monotonic()
        return end - self.created_at


class FakeSocketMode:
    def __init__(self, slack: FakeSlack, *, close_after_s: float = 1.0) -> None:
        self.slack = slack
        self.close_after_s = close_after_s
        self.connections: list[Connection] = []
        self.envelopes: dict[str, Envelope] = {}
        self.unsent: list[Envelope] = []  # waiting for an open connection
        self.acks_for_unknown = 0
        self._numbers = itertools.count(1)
        self._turn = itertools.count()
        self._tasks: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/link/", self._link)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.slack.methods["apps.connections.open"] = self._connections_open

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for connection in self.open_connections:
            await connection.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- what a test looks at ----------------------------------------------------------

    @property
    def open_connections(self) -> list[Connection]:
        return [c for c in self.connections if c.open]

    @property
    def unacked(self) -> list[Envelope]:
        return [e for e in self.envelopes.values() if e.acked_at is None]

    def offline_s(self) -> float:
        """How long, since the first connection opened, no connection could take envelopes
        (none open, or only silent ones)."""
        if not self.connections:
            return 0.0
        marks: list[tuple[float, int]] = []
        for c in self.connections:
            marks.append((c.opened_at, 1))
            end = c.silenced_at if c.silenced_at is not None else c.closed_at
            if end is not None:
                marks.append((end, -1))
        marks.sort()
        offline, usable, since = 0.0, 0, marks[0][0]
        for at, step in marks:
            if usable == 0:
                offline += at - since
            usable += step
            since = at
        if usable == 0:
            offline += time.monotonic() - since
        return offline

    def max_unacked_s(self) -> float:
        return max((e.waited_s for e in self.envelopes.values()), default=0.0)

    # -- Slack's side ------------------------------------------------------------------

    def send_event(self, payload: dict[str, Any]) -> Envelope:
        """Deliver an Events API payload (an ``event_callback`` body) on an open connection."""
        envelope = Envelope(str(uuid.uuid4()), payload, time.monotonic())
        self.envelopes[envelope.envelope_id] = envelope
        self._deliver(envelope)
        return envelope

    async def drop(self, connection: Connection) -> None:
        """Close it with a close frame."""
        await connection.ws.close()

    def reset(self, connection: Connection) -> None:
        """Abort the TCP connection: no close frame, the client finds it gone."""
        transport = connection.request.transport
        assert transport is not None
        transport.abort()

    def silence(self, connection: Connection) -> None:
        """From now on the connection answers no ping and gets no envelope."""
        connection.silent, connection.silenced_at = True, time.monotonic()

    async def refresh(self, connection: Connection, reason: str = "refresh_requested") -> None:
        """Send ``disconnect`` with ``reason``; close the connection ``close_after_s`` later."""
        connection.disconnect_sent, connection.disconnect_at = reason, time.monotonic()
        message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "fake"}}
        await connection.ws.send_str(json.dumps(message))
        self._spawn(self._close_later(connection))

    # -- internals -----------------------------------------------------------------------

    def _connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket={uuid.uuid4()}"}

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=False)
        await ws.prepare(request)
        connection = Connection(next(self._numbers), ws, request, time.monotonic())
        self.connections.append(connection)
        hello = {
            "type": "hello",
            "num_connections": len(self.open_connections),
            "debug_info": {"host": "fake", "approximate_connection_time": 3600},
            "connection_info": {"app_id": "A0APP"},
        }
        await ws.send_str(json.dumps(hello))
        waiting, self.unsent = self.unsent, []
        for envelope in waiting:
            self._deliver(envelope)
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._ack(json.loads(message.data))
                elif message.type == WSMsgType.PING and not connection.silent:
                    await ws.pong(message.data)
        finally:
            connection.closed_at = time.monotonic()
            self._resend_from(connection)
        return ws

    def _ack(self, data: dict[str, Any]) -> None:
        envelope = self.envelopes.get(str(data.get("envelope_id")))
        if envelope is None:
            self.acks_for_unknown += 1
        elif envelope.acked_at is None:
            envelope.acked_at = time.monotonic()

    def _deliver(self, envelope: Envelope) -> None:
        targets = [c for c in self.open_connections if not c.ws.closed and not c.silent]
        if not targets:
            self.unsent.append(envelope)
            return
        connection = targets[next(self._turn) % len(targets)]
        envelope.sent_on.append(connection.number)
        message = {
            "envelope_id": envelope.envelope_id,
            "type": "events_api",
            "payload": envelope.payload,
            "accepts_response_payload": False,
            "retry_attempt": len(envelope.sent_on) - 1,
            "retry_reason": "" if len(envelope.sent_on) == 1 else "timeout",
        }
        self._spawn(self._send(connection, envelope, json.dumps(message)))

    async def _send(self, connection: Connection, envelope: Envelope, text: str) -> None:
        try:
            await connection.ws.send_str(text)
        except (ConnectionError, RuntimeError):
            connection.closed_at = connection.closed_at or time.monotonic()
            self._deliver(envelope)  # it never left: another connection takes it

    def _resend_from(self, connection: Connection) -> None:
        for envelope in self.unacked:
            if envelope.sent_on and envelope.sent_on[-1] == connection.number:
                self._deliver(envelope)

    async def _close_later(self, connection: Connection) -> None:
        await asyncio.sleep(self.close_after_s)
        await connection.ws.close()

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
