"""A pool of Socket Mode connections sharing one Bolt app.

``connections`` slots, each holding one connection (a ``PooledClient``). Slack spreads
envelopes over every open connection, so while one slot reconnects the others still take
events; an envelope sent on a connection that dropped before its ack is resent by Slack on
another one, and Ingress drops the duplicate by its event id.

- A refresh (a ``disconnect`` with reason ``warning`` or ``refresh_requested``): the slot
  opens its new connection first, then closes the old one.
- A drop or a silent connection: the SDK reconnects the slot (ping every ``ping_interval_s``).
- A refusal for good (``link_disabled``, ``invalid_auth``, a revoked token): logged once,
  ``problem()`` names it (so ``/readyz`` fails), and the slot tries again quietly every
  ``retry_refused_s``; the first connection that opens again clears it, with one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from typing import Any

from slack_bolt.adapter.socket_mode.async_internals import (
    run_async_bolt_app,
    send_async_response,
)
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.inbound.message_events import MessageEvents
from bot.slack.inbound.socket.client import PooledClient
from bot.slack.inbound.socket.refusals import REFRESH_REASONS, REFUSED_REASONS, TOO_MANY, is_refusal
from bot.slack.inbound.socket.sdk_log import QuietSdkLog

log = logging.getLogger(__name__)
sdk_log = logging.getLogger("bot.slack.inbound.socket.sdk")
sdk_log.addFilter(QuietSdkLog())

CLOSE_TIMEOUT_S = 2.0


class SocketPool:
    def __init__(
        self,
        app: AsyncApp,
        app_token: str,
        web_client: AsyncWebClient,
        *,
        connections: int = 2,
        ping_interval_s: float = 3.0,
        retry_refused_s: float = 30.0,
        messages: MessageEvents | None = None,
    ) -> None:
        self.app = app
        self.messages = messages  # message events past Bolt
        self.app_token = app_token
        self.web_client = web_client
        self.ping_interval_s = ping_interval_s
        self.retry_refused_s = retry_refused_s
        self.slots: list[PooledClient | None] = [None] * connections
        self.refused: str | None = None  # the error Slack refuses the app with, for now
        self.closing = False
        self.connected_once = False
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Open every slot in the background; ``problem()`` says when one is open."""
        for slot in range(len(self.slots)):
            self._open(slot)

    async def problem(self) -> str | None:
        """What keeps the pool from taking events, in plain words; None when it can."""
        if self.refused is not None:
            return f"Slack refuses the Socket Mode connection ({self.refused})"
        for client in self.slots:
            if client is not None and await client.is_connected():
                return None
        return "no Socket Mode connection to Slack is open"

    async def close(self) -> None:
        self.closing = True
        for task in list(self._tasks):
            task.cancel()
        clients = [c for c in self.slots if c is not None]
        self.slots = [None] * len(self.slots)
        await asyncio.gather(*(self._close(c) for c in clients))
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- slots ---------------------------------------------------------------------------

    def _client(self) -> PooledClient:
        client = PooledClient(
            self.app_token,
            self.web_client,
            ping_interval=self.ping_interval_s,
            on_disconnect=self._disconnected,
            on_refused=self._refused,
            logger=sdk_log,
        )
        client.socket_mode_request_listeners.append(self._dispatch)
        return client

    def _open(self, slot: int) -> None:
        client = self._client()
        self.slots[slot] = client
        self._spawn(self._connect(client))

    async def _connect(self, client: PooledClient) -> None:
        await client.connect()  # type: ignore[no-untyped-call]  # returns once open, or closed
        if not client.closed:
            self._opened()

    def _opened(self) -> None:
        if not self.connected_once:
            self.connected_once = True
            log.warning("slack-agent connected in Socket Mode")
        if self.refused is not None:
            log.warning("Slack takes the Socket Mode connection again (was %s)", self.refused)
            self.refused = None

    def _slot_of(self, client: PooledClient) -> int | None:
        for slot, held in enumerate(self.slots):
            if held is client:
                return slot
        return None  # a client already replaced

    def _disconnected(self, client: PooledClient, reason: str) -> None:
        slot = self._slot_of(client)
        if slot is None or self.closing:
            return
        if reason in REFUSED_REASONS:
            self._refused(client, reason)
            return
        if reason == TOO_MANY:
            self._too_many(slot, client)
            return
        if reason not in REFRESH_REASONS:
            log.info("Slack asked to disconnect (%s); opening a new connection", reason)
        self._spawn(self._refresh(slot, client))

    def _too_many(self, slot: int, client: PooledClient) -> None:
        """Slack counts the app's connections across every replica (at most 10): give this
        slot up while another is held; the last one is closed before it opens again."""
        others = [c for i, c in enumerate(self.slots) if c is not None and i != slot]
        self.slots[slot] = None
        log.warning(
            "Slack refuses more Socket Mode connections for this app (%s: at most 10 across "
            "every replica); this process now keeps %d. Lower slack.socket_connections",
            TOO_MANY,
            max(len(others), 1),
        )
        if others:
            self._spawn(self._close(client))
        else:
            self._spawn(self._reopen(slot, client))

    async def _reopen(self, slot: int, old: PooledClient) -> None:
        await self._close(old)
        if not self.closing and self.slots[slot] is None:
            self._open(slot)

    async def _refresh(self, slot: int, old: PooledClient) -> None:
        """The new connection first, then the old one goes."""
        new = self._client()
        try:
            await new.connect()  # type: ignore[no-untyped-call]
        except BaseException:
            await self._close(new)
            raise
        if new.closed or self.closing or self.slots[slot] is not old:
            await self._close(new)
            return
        self.slots[slot] = new
        self._opened()
        await self._close(old)

    def _refused(self, client: PooledClient, error: str) -> None:
        slot = self._slot_of(client)
        if slot is None or self.closing:
            return
        if self.refused is None:
            log.error(
                "Slack refuses the Socket Mode connection (%s): check SLACK_APP_TOKEN (an "
                "app-level token with connections:write) and that Socket Mode is on for the "
                "app. /readyz fails until a connection opens; trying again every %g s",
                error,
                self.retry_refused_s,
            )
        self.refused = error
        self.slots[slot] = None
        self._spawn(self._retry(slot, client))

    async def _retry(self, slot: int, client: PooledClient) -> None:
        """Ask apps.connections.open quietly until Slack takes the token again; only then
        open a connection (a client per attempt would log at every one)."""
        await self._close(client)
        while not self.closing:
            await asyncio.sleep(self.retry_refused_s)
            try:
                await self.web_client.apps_connections_open(app_token=self.app_token)
            except SlackApiError as exc:
                error = str(exc.response.get("error") or "")
                if is_refusal(error):
                    self.refused = error
                log.debug("apps.connections.open still failing: %s", error)
                continue
            except Exception as exc:
                log.debug("apps.connections.open still failing: %s", exc)
                continue
            if self.slots[slot] is None:
                self._open(slot)
            return

    async def _close(self, client: PooledClient) -> None:
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await client.close()  # type: ignore[no-untyped-call]
        except Exception as exc:
            log.debug("closing a Socket Mode connection: %s", exc)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _dispatch(
        self, client: AsyncBaseSocketModeClient, request: SocketModeRequest
    ) -> None:
        started = time.time()
        response = await answer(self.app, self.messages, request)
        await send_async_response(client, request, response, started)


async def answer(
    app: AsyncApp, messages: MessageEvents | None, request: SocketModeRequest
) -> BoltResponse:
    """What a Socket Mode request is answered with (anything but 200 sends no ack): a
    message event's by the short way past Bolt, every other request's by Bolt."""
    response = await messages.answer(request.payload) if messages is not None else None
    return response if response is not None else await run_async_bolt_app(app, request)
