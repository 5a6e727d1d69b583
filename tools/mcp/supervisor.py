"""Supervision of one MCP server: a long-lived owner task keeps its client up, its tool
list current, and reconnects.

The owner task starts the transport (stdio program, streamable HTTP, or SSE) and opens the
SDK's :class:`mcp.client.Client` over it, which negotiates the protocol as the SDK does
(``mode="auto"``: ``server/discover`` for a 2026-07-28 server, the ``initialize`` handshake
when the server refuses it; SSE, a handshake-era transport, always uses the handshake), then
lists the tools (``tools/mcp/listing.py``). Start-up is never cut short: a slow server keeps
starting, and its tools appear when it is ready (``connect_timeout_s`` only bounds how long
the bot's start waits for it). Then it waits: ``tools/list_changed`` re-lists (on a 2026
connection, whose requests stand alone, the server says it on a ``subscriptions/listen``
stream held open for it, when the server offers one); a quiet connection is checked every
``ping_interval_s`` (``ping`` on a handshake-era connection, ``server/discover`` on a 2026
one, which has no ping).

A URL without a ``transport`` is tried over streamable HTTP, and over SSE only when the server
answered the POSTs as a URL without a streamable HTTP endpoint does (404 or 405 with no
JSON-RPC error) and people do not sign in to it (``auth: oauth`` never falls back): a refusal
(a JSON-RPC error, 401, 403, ...) is the server's answer, and the error names it
(``transports.HttpAnswers``). Over HTTP the connection's requests may be signed
by an ``httpx2.Auth`` given to it (e.g. ``mcp.client.auth.OAuthClientProvider``).

A dead server is noticed at once when its stream ends (a stdio program exited) or a call
finds the connection closed (:meth:`Supervisor.mark_broken`): its tools leave the offer at
once, and reconnection starts at once, with backoff (0.5 s doubling to ``reconnect_max_s``)
after repeated failures. An HTTP server that cannot be reached is probed every half second,
so its tools return as soon as it is back. One log line per outage; the program's stderr is
logged line by line under its name, once per outage while it keeps failing.

The client introduces itself with the bot's name and version and offers what
``tools/mcp/server_requests.py`` serves: elicitation, sampling (for servers with
``sampling: true``) and progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp.client import Client
from mcp.client.subscriptions import SubscriptionLost
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tools.definition import Tool
from tools.mcp.config import McpServerConfig, Transport
from tools.mcp.failures import could_not_connect, describe
from tools.mcp.listing import ToolListing
from tools.mcp.server_requests import ServerRequests
from tools.mcp.stderr import ServerStderr, server_log
from tools.mcp.transports import (
    HttpAnswers,
    WatchedReadStream,
    new_client,
    open_transport,
    reachable,
)

log = logging.getLogger(__name__)

BACKOFF_START_S = 0.5
PROBE_S = 0.5  # an unreachable HTTP server is looked for this often
PING_TIMEOUT_S = 10.0
LIST_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
}


class Supervisor:
    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        listing: ToolListing,
        requests: ServerRequests,
        *,
        reconnect_max_s: float,
        on_change: Callable[[], None] | None,
        auth: httpx2.Auth | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.listing = listing
        self.requests = requests
        self.reconnect_max_s = reconnect_max_s
        self.on_change = on_change
        self.auth = auth  # signs the connection's HTTP requests
        self.tools: dict[str, Tool] = {}  # offered now, by the name the model sees
        self.known: dict[str, Tool] = {}  # as last listed: a call while away is "unavailable"
        self.connected = asyncio.Event()
        self.tried = asyncio.Event()  # set once the first attempt has succeeded or failed
        self.last_error: str | None = None
        self.failures = 0  # attempts that failed since it was last up
        self.starting_since: float | None = None  # monotonic time the running attempt began
        self.kind: Transport = config.kind
        self.protocol: str | None = None  # the protocol version negotiated when last up
        self.stderr = ServerStderr(name)
        self.client: Client | None = None  # the live client calls are made on
        self._answers = HttpAnswers()  # what the server answered this attempt's POSTs
        self._broken: str | None = None  # why the live session is known to be dead
        self._wake = asyncio.Event()
        self._relist = False
        self._unreachable = False  # the last attempt could not even connect (HTTP)
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._own(), name=f"mcp-{self.name}")

    async def stop(self) -> None:
        """End the session cleanly: the SDK's shielded shutdown stops a stdio server's
        process (a native task.cancel() could leave it running), then the task ends."""
        if self._task is None:
            return
        if self._scope is not None:
            self._scope.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), STOP_TIMEOUT_S)
        except (TimeoutError, asyncio.CancelledError, Exception):
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._task = None

    async def _own(self) -> None:
        with anyio.CancelScope() as scope:
            self._scope = scope
            await self._connect_forever()

    async def _connect_forever(self) -> None:
        delay = 0.0
        first_failure: str | None = None  # the streamable HTTP attempt before an SSE one
        while True:
            was_up = False
            try:
                async with self._client_over(self.kind) as client:
                    await self._start_session(client)
                    was_up = True
                    first_failure = None
                    await self._serve(client)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anyio wraps failures in exception groups
                if not isinstance(exc, Exception):
                    raise
                reason = self._why(exc, was_up)
                if not was_up and self._may_fall_back():
                    log.info(
                        "MCP server %s: no streamable HTTP at its URL (%s); trying SSE",
                        self.name,
                        reason,
                    )
                    self.kind, first_failure = "sse", reason
                    continue
                if first_failure is not None:
                    reason = f"neither streamable HTTP ({first_failure}) nor SSE ({reason})"
                    self.kind, first_failure = "streamable_http", None
                elif (
                    not was_up
                    and self.kind == "streamable_http"
                    and self.config.may_use_sse
                    and self._answers.not_an_endpoint()
                ):
                    reason += "; if the URL is an SSE server, set `transport: sse`"
                self._unreachable = could_not_connect(exc)
                self._went_down(reason)
            finally:
                self.client = None
                self.starting_since = None
                self.connected.clear()
            self.tried.set()
            delay = 0.0 if was_up else min(max(delay * 2, BACKOFF_START_S), self.reconnect_max_s)
            await self._pause(delay)

    @contextlib.asynccontextmanager
    async def _transport(self, kind: Transport) -> AsyncIterator[tuple[Any, Any]]:
        """The transport's streams, its read stream watched for the server's end."""
        async with open_transport(
            self.config, kind, self.stderr, auth=self.auth, answers=self._answers
        ) as (read, write):
            yield WatchedReadStream(read, self._stream_ended), write

    @contextlib.asynccontextmanager
    async def _client_over(self, kind: Transport) -> AsyncIterator[Client]:
        """A client over ``kind``, the protocol negotiated (however long the server takes)."""
        self._broken = None
        self._answers = HttpAnswers()
        self.stderr.last_lines.clear()
        self.starting_since = time.monotonic()
        client = new_client(
            self._transport(kind),
            kind,
            self.requests,
            message_handler=self._on_message,
            logging_callback=self._on_log,
            cache=None,  # the tool list is fetched when it changes; results are never reused
        )
        async with client:
            yield client

    async def _start_session(self, client: Client) -> None:
        """List the tools of a client that has just connected."""
        self.client = client  # a call that arrives with the listing finds it
        self.protocol = client.protocol_version
        await self._list(client)
        self.starting_since = None
        was_down = self.last_error is not None
        self.last_error = None
        self.failures = 0
        self._unreachable = False
        self.stderr.quiet = False
        self.connected.set()
        self.tried.set()
        log.info(
            "MCP server %s %s (%s, protocol %s): %d tools",
            self.name,
            "is back" if was_down else "connected",
            self.kind,
            client.protocol_version,
            len(self.tools),
        )

    def _why(self, exc: BaseException, was_up: bool) -> str:
        """Why the attempt failed, in words; an HTTP refusal names what the server said."""
        reason = describe(exc)
        refusal = self._answers.refusal
        if not was_up and self._answers.refused() and refusal and refusal not in reason:
            reason += f" (the server answered {refusal})"
        return reason

    def _may_fall_back(self) -> bool:
        """A URL without an explicit transport whose POSTs were answered as a URL without a
        streamable HTTP endpoint answers them (404, 405) is tried over SSE, as the MCP spec
        suggests; a refusal (a JSON-RPC error, 401, 403, ...) is not, and a server with
        ``auth: oauth`` never is."""
        return (
            self.config.transport is None
            and self.config.may_use_sse
            and self.kind == "streamable_http"
            and self._answers.not_an_endpoint()
        )

    async def _pause(self, delay: float) -> None:
        """Wait before the next attempt; an unreachable HTTP server is probed meanwhile, so
        the attempt starts as soon as it accepts connections again."""
        if delay <= 0:
            return
        if not (self._unreachable and self.config.url is not None):
            await asyncio.sleep(delay)
            return
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(PROBE_S, left))
            if await reachable(self.config.url):
                return

    def _went_down(self, reason: str) -> None:
        if self.kind == "stdio" and self.stderr.last_words():
            reason = f"{reason}; its last stderr line: {self.stderr.last_words()[:300]}"
        first = self.last_error is None
        self.last_error = reason
        self.failures += 1
        self.stderr.quiet = True  # its stderr while it keeps failing is not logged again
        count = len(self.known)
        self._offline()
        if first:  # one line per outage, not one per retry
            log.warning(
                "MCP server %s is unavailable (%s); %d tools are offline until it is "
                "back; reconnecting with backoff",
                self.name,
                reason,
                count,
            )

    def _offline(self) -> None:
        if self.tools:
            self.tools = {}
            self._changed()

    def _stream_ended(self) -> None:
        """The server's side of the connection ended: it is dead, now."""
        self.mark_broken("the connection closed")

    def mark_broken(self, reason: str) -> None:
        if self.client is None or self._broken is not None:
            return
        self._broken = reason
        self.client = None
        self.connected.clear()
        self._offline()
        self._wake.set()

    async def _serve(self, client: Client) -> None:
        async with anyio.create_task_group() as group:
            if _listens_for_tools(client):
                group.start_soon(self._listen, client)
            await self._watch(client)

    async def _listen(self, client: Client) -> None:
        """Hold a 2026 server's ``subscriptions/listen`` stream open: a tools change
        re-lists; the stream lost means the server is."""
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    self._relist = True
                    self._wake.set()
        except SubscriptionLost:
            self.mark_broken("its tool-change subscription was lost")
        except Exception as exc:  # refused: tool changes are seen when it reconnects
            log.info("MCP server %s: no tool-change subscription (%s)", self.name, describe(exc))

    async def _watch(self, client: Client) -> None:
        while True:
            woke = False
            with anyio.move_on_after(self.config.ping_interval_s):
                await self._wake.wait()
                woke = True
            self._wake.clear()
            if self._broken is not None:
                raise ConnectionError(self._broken)
            if self._relist:
                self._relist = False
                with anyio.fail_after(LIST_TIMEOUT_S):
                    await self._list(client)
                log.info("MCP server %s changed its tools: %d now", self.name, len(self.tools))
                continue
            if not woke:
                with anyio.fail_after(PING_TIMEOUT_S):
                    await self._check(client)

    async def _check(self, client: Client) -> None:
        """Whether the server still answers: ``ping``, or on a 2026 connection (which has no
        ping) ``server/discover``."""
        version = client.protocol_version
        if version in MODERN_PROTOCOL_VERSIONS:
            await client.session.send_discover(version)
        else:
            await client.session.send_ping()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error %s", self.name, describe(message))
        await anyio.lowlevel.checkpoint()

    async def _on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        level = _LOG_LEVELS.get(str(params.level), logging.ERROR)
        where = f" [{params.logger}]" if params.logger else ""
        server_log.log(level, "%s%s: %s", self.name, where, params.data)

    async def _list(self, client: Client) -> None:
        tools = await self.listing.tools(client)
        self.tools = tools
        self.known = dict(tools)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()


def _listens_for_tools(client: Client) -> bool:
    """A 2026 connection to a server that says its tool list changes."""
    tools = client.server_capabilities.tools
    return (
        client.protocol_version in MODERN_PROTOCOL_VERSIONS
        and tools is not None
        and bool(tools.list_changed)
    )
