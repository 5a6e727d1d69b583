"""One MCP server: a long-lived task owns its session, keeps its tool list, and reconnects.

The owner task starts the transport (stdio program, streamable HTTP, or SSE; a URL without a
``transport`` tries streamable HTTP and falls back to SSE), initializes and lists the tools.
Start-up is never cut short: a slow server keeps starting, and its tools appear when it is
ready (``connect_timeout_s`` only bounds how long the bot's start waits for it). Then it
waits: ``tools/list_changed`` re-lists; a quiet connection is pinged every
``ping_interval_s``.

A dead server is noticed at once when its stream ends (a stdio program exited) or a call
finds the connection closed: its tools leave the offer at once, a call that still arrives
for one of them is answered "unavailable", and reconnection starts at once, with backoff
(0.5 s doubling to ``reconnect_max_s``) after repeated failures. An HTTP server that cannot
be reached is probed every half second, so its tools return as soon as it is back. One log
line per outage; the program's stderr is logged line by line under its name, once per
outage while it keeps failing.

The client introduces itself with the bot's name and version and offers elicitation (asking
the person a tool runs for), sampling (for servers with ``sampling: true``) and progress.
Calls run in the callers' tasks on the owner's session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError

from tools.definition import Tool
from tools.errors import ToolError
from tools.mcp.config import McpServerConfig, Transport
from tools.mcp.elicitation import elicit_result, question_for
from tools.mcp.identity import client_info
from tools.mcp.remote_tools import needs_tasks, wrap_tool
from tools.mcp.results import render_contents, render_result
from tools.mcp.running import RunningCalls
from tools.mcp.sampling import (
    Sampler,
    SamplingRequest,
    capped_tokens,
    chat_messages,
    create_message_result,
)
from tools.mcp.stderr import ServerStderr, server_log
from tools.mcp.transports import WatchedReadStream, open_transport, reachable
from tools.patterns import matches
from tools.questions import Answer

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


class McpUnavailable(ToolError):
    kind = "McpServerUnavailable"


class McpConnection:
    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        reconnect_max_s: float = 30.0,
        on_change: Callable[[], None] | None = None,
        sampler: Sampler | None = None,
        elicitation_timeout_s: float = 300.0,
    ) -> None:
        self.name = name
        self.config = config
        self.reconnect_max_s = reconnect_max_s
        self.on_change = on_change
        self.sampler = sampler
        self.elicitation_timeout_s = elicitation_timeout_s
        self.tools: dict[str, Tool] = {}  # offered now, by the name the model sees
        self.known: dict[str, Tool] = {}  # as last listed: a call while away is "unavailable"
        self.connected = asyncio.Event()
        self.tried = asyncio.Event()  # set once the first attempt has succeeded or failed
        self.last_error: str | None = None
        self.failures = 0  # attempts that failed since it was last up
        self.starting_since: float | None = None  # monotonic time the running attempt began
        self.kind: Transport = config.kind
        self.stderr = ServerStderr(name)
        self._session: ClientSession | None = None
        self._broken: str | None = None  # why the live session is known to be dead
        self._wake = asyncio.Event()
        self._relist = False
        self._unreachable = False  # the last attempt could not even connect (HTTP)
        self._warned_tasks: set[str] = set()
        self._calls = RunningCalls()
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None

    @property
    def source(self) -> str:
        return f"mcp {self.name}"

    def unavailable(self) -> McpUnavailable:
        return McpUnavailable(f"The MCP server {self.name} is unavailable right now.")

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

    # --- the owner task ------------------------------------------------------------------

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
                async with self._session_over(self.kind) as session:
                    await self._start_session(session)
                    was_up = True
                    first_failure = None
                    await self._serve(session)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anyio wraps failures in exception groups
                if not isinstance(exc, Exception):
                    raise
                reason = describe(exc)
                if not was_up and self._may_fall_back(exc):
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
                elif not was_up and self.kind == "streamable_http" and _refused_over_http(exc):
                    reason += "; if the URL is an SSE server, set `transport: sse`"
                self._unreachable = _could_not_connect(exc)
                self._went_down(reason)
            finally:
                self._session = None
                self.starting_since = None
                self.connected.clear()
            self.tried.set()
            delay = 0.0 if was_up else min(max(delay * 2, BACKOFF_START_S), self.reconnect_max_s)
            await self._pause(delay)

    @contextlib.asynccontextmanager
    async def _session_over(self, kind: Transport) -> AsyncIterator[ClientSession]:
        self._broken = None
        self.stderr.last_lines.clear()
        self.starting_since = time.monotonic()
        async with open_transport(self.config, kind, self.stderr) as (read, write):
            watched = WatchedReadStream(read, self._stream_ended)
            async with ClientSession(
                watched,
                write,
                message_handler=self._on_message,
                logging_callback=self._on_log,
                client_info=client_info(),
                sampling_callback=self._sample if self.config.sampling and self.sampler else None,
                elicitation_callback=self._elicit,
            ) as session:
                yield session

    async def _start_session(self, session: ClientSession) -> None:
        """Initialize and list, however long the server takes to start."""
        await session.initialize()
        self._session = session  # a call that arrives with the listing finds it
        await self._list(session)
        self.starting_since = None
        was_down = self.last_error is not None
        self.last_error = None
        self.failures = 0
        self._unreachable = False
        self.stderr.quiet = False
        self.connected.set()
        self.tried.set()
        log.info(
            "MCP server %s %s (%s): %d tools",
            self.name,
            "is back" if was_down else "connected",
            self.kind,
            len(self.tools),
        )

    def _may_fall_back(self, exc: BaseException) -> bool:
        """A URL without an explicit transport whose streamable HTTP start was refused at the
        HTTP level (404, 405, ...) is tried over SSE, as the MCP spec suggests."""
        return (
            self.config.transport is None
            and self.kind == "streamable_http"
            and _refused_over_http(exc)
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
        self._mark_broken("the connection closed")

    def _mark_broken(self, reason: str) -> None:
        if self._session is None or self._broken is not None:
            return
        self._broken = reason
        self._session = None
        self.connected.clear()
        self._offline()
        self._wake.set()

    async def _serve(self, session: ClientSession) -> None:
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
                    await self._list(session)
                log.info("MCP server %s changed its tools: %d now", self.name, len(self.tools))
                continue
            if not woke:
                with anyio.fail_after(PING_TIMEOUT_S):
                    await session.send_ping()

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

    async def _list(self, session: ClientSession) -> None:
        listed: list[Any] = []
        cursor: str | None = None
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        tools: dict[str, Tool] = {}
        for remote in listed:
            if not matches(self.config.allow, remote.name) or matches(
                self.config.deny, remote.name
            ):
                continue
            if needs_tasks(remote):
                if remote.name not in self._warned_tasks:
                    self._warned_tasks.add(remote.name)
                    log.warning(
                        "MCP server %s: the tool %s runs only as a task, which this bot does "
                        "not support; leaving it out",
                        self.name,
                        remote.name,
                    )
                continue
            tool = wrap_tool(
                remote, self.config.prefix, self.config.call_timeout_s, self.source, self.call
            )
            if tool.name in tools:
                log.warning("MCP server %s lists %s twice; keeping the first", self.name, tool.name)
                continue
            tools[tool.name] = tool
        self.tools = tools
        self.known = dict(tools)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # --- calls ---------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        session = self._session
        if session is None:
            raise self.unavailable()
        with self._calls.running(tool) as running:
            scope = running.scope
            try:
                result = await session.call_tool(
                    tool, arguments, progress_callback=scope.progress if scope else None
                )
            except Exception as exc:
                raise self._call_failed(exc) from None
        return render_result(result, self.name)

    async def read_resource(self, uri: str) -> str:
        session = self._session
        if session is None:
            raise self.unavailable()
        try:
            result = await session.read_resource(uri)
        except Exception as exc:
            raise self._call_failed(exc) from None
        return render_contents(result.contents)

    def _call_failed(self, exc: Exception) -> ToolError:
        """What a request that raised ``exc`` tells the model; a dead connection is marked
        broken at once."""
        if isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED:
            self._mark_broken(f"a call found the connection closed ({exc.message})")
            return self.unavailable()
        if isinstance(exc, MCPError):
            return ToolError(f"The MCP server {self.name} refused the call: {exc.message}")
        if _is_transport_failure(exc):
            self._mark_broken(f"a call failed: {describe(exc)}")
            return self.unavailable()
        if isinstance(exc, RuntimeError):  # e.g. a result that breaks its output schema
            return ToolError(f"The MCP server {self.name} returned a bad result: {exc}")
        raise exc

    # --- requests from the server --------------------------------------------------------

    async def _sample(
        self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        running = self._calls.asking()
        if running is None or running.requester is None or self.sampler is None:
            log.info("MCP server %s asked for sampling outside a person's tool call", self.name)
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message="Sampling is only served during a tool call a person started.",
            )
        if params.tools:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST, message="Sampling with tools is not supported."
            )
        request = SamplingRequest(
            server=self.name,
            tool=running.tool,
            requester=running.requester,
            messages=chat_messages(params),
            max_tokens=capped_tokens(params.max_tokens, self.config.sampling_max_tokens),
            temperature=params.temperature,
        )
        try:
            reply = await self.sampler.sample(request)
        except Exception as exc:
            log.warning("sampling for MCP server %s failed: %s", self.name, describe(exc))
            return mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR, message=f"The model could not answer: {exc}"
            )
        return create_message_result(reply)

    async def _elicit(
        self, context: ClientRequestContext, params: Any
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        url_mode = isinstance(params, mcp_types.ElicitRequestURLParams)
        running = self._calls.asking()
        asker = running.requester.asker if running and running.requester else None
        if running is None or asker is None:
            log.info("MCP server %s asked a question, but nobody can be asked; declined", self.name)
            return elicit_result(Answer.declined(), url_mode)
        question = question_for(self.name, params, self.elicitation_timeout_s)
        scope = running.scope
        task = asyncio.ensure_future(asker.ask(question))
        running.asks.add(task)
        try:
            with scope.clock_stopped() if scope else contextlib.nullcontext():
                answer = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            answer = Answer("cancel")  # the tool call ended while the person was asked
        except Exception as exc:
            log.warning("asking for MCP server %s failed: %s", self.name, describe(exc))
            answer = Answer.declined()
        finally:
            running.asks.discard(task)
            if not task.done():
                task.cancel()
        return elicit_result(answer, url_mode)


def describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def _refused_over_http(exc: BaseException) -> bool:
    """The server answered, but not as a streamable HTTP MCP server (404, 405, ...)."""
    if _could_not_connect(exc):
        return False
    return any(
        isinstance(item, MCPError) and item.code != mcp_types.CONNECTION_CLOSED
        for item in _nested(exc)
    )


def _could_not_connect(exc: BaseException) -> bool:
    """Whether nothing answered at the server's address (refused, no route, bad name)."""
    return any(
        isinstance(item, ConnectionRefusedError) or "ConnectError" in type(item).__name__
        for item in _nested(exc)
    )


def _nested(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception inside its groups, causes and contexts."""
    found: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or any(item is seen for seen in found):
            continue
        found.append(item)
        if isinstance(item, BaseExceptionGroup):
            todo.extend(item.exceptions)
        todo.extend((item.__cause__, item.__context__))
    return found


def _is_transport_failure(exc: BaseException) -> bool:
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | OSError):
        return True
    name = type(exc).__name__
    return "Connect" in name or "Transport" in name or "Network" in name or "Closed" in name
