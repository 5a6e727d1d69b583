"""One MCP server: a long-lived task owns its session, keeps its tool list, and reconnects.

The owner task connects (stdio subprocess or streamable HTTP), initializes within
``connect_timeout_s``, lists the tools, then waits: a ``tools/list_changed`` notification
re-lists them; a quiet connection is pinged every ``ping_interval_s``; a failed ping or call
ends the session. While the server is away its tools are not offered (one log line says so),
and the task reconnects with backoff; the tools return when it is back. Calls run in the
callers' tasks on the owner's session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import jsonschema
import mcp_types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from tools.definition import Tool
from tools.errors import ToolArgumentsError, ToolError
from tools.mcp.config import McpServerConfig, substitute
from tools.mcp.results import render_result
from tools.patterns import matches

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
BACKOFF_START_S = 0.5
STOP_TIMEOUT_S = 10.0


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
    ) -> None:
        self.name = name
        self.config = config
        self.reconnect_max_s = reconnect_max_s
        self.on_change = on_change
        self.tools: dict[str, Tool] = {}  # by the name the model sees
        self.connected = asyncio.Event()
        self.tried = asyncio.Event()  # set once the first attempt has succeeded or failed
        self.last_error: str | None = None
        self._session: ClientSession | None = None
        self._wake = asyncio.Event()
        self._relist = False
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None

    @property
    def source(self) -> str:
        return f"mcp {self.name}"

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
        delay = BACKOFF_START_S
        while True:
            try:
                async with (
                    self._transport() as (read, write),
                    ClientSession(read, write, message_handler=self._on_message) as session,
                ):
                    try:
                        with anyio.fail_after(self.config.connect_timeout_s):
                            await session.initialize()
                            await self._list(session)
                    except BaseException:
                        self.tried.set()  # start-up need not wait for the cleanup
                        raise
                    self._session = session
                    was_down = self.last_error is not None
                    self.last_error = None
                    self.connected.set()
                    self.tried.set()
                    log.info(
                        "MCP server %s %s: %d tools",
                        self.name,
                        "is back" if was_down else "connected",
                        len(self.tools),
                    )
                    delay = BACKOFF_START_S
                    await self._serve(session)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anyio wraps failures in exception groups
                if not isinstance(exc, Exception):
                    raise
                self._went_down(_describe(exc))
            finally:
                self._session = None
                self.connected.clear()
            self.tried.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.reconnect_max_s)

    def _went_down(self, reason: str) -> None:
        first = self.last_error is None
        self.last_error = reason
        count = len(self.tools)
        if self.tools:
            self.tools = {}
            self._changed()
        if first:  # one line per outage, not one per retry
            log.warning(
                "MCP server %s is unavailable (%s); %d tools are offline until it is "
                "back; reconnecting with backoff",
                self.name,
                reason,
                count,
            )

    async def _serve(self, session: ClientSession) -> None:
        while True:
            with anyio.move_on_after(self.config.ping_interval_s):
                await self._wake.wait()
            self._wake.clear()
            if self._relist:
                self._relist = False
                with anyio.fail_after(self.config.connect_timeout_s):
                    await self._list(session)
                log.info("MCP server %s changed its tools: %d now", self.name, len(self.tools))
                continue
            if self._session is None:
                raise ConnectionError("a call found the connection broken")
            with anyio.fail_after(self.config.connect_timeout_s):
                await session.send_ping()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        config = self.config
        if config.command is not None:
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env={key: substitute(value) for key, value in config.env.items()},
                cwd=config.cwd,
            )
            async with stdio_client(params, errlog=sys.stderr) as streams:
                yield streams
            return
        assert config.url is not None
        headers = {key: substitute(value) for key, value in config.headers.items()}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(substitute(config.url), http_client=http) as streams,
        ):
            yield streams

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()
        await anyio.lowlevel.checkpoint()

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
            tool = self._wrap(remote)
            if tool.name in tools:
                log.warning("MCP server %s lists %s twice; keeping the first", self.name, tool.name)
                continue
            tools[tool.name] = tool
        self.tools = tools
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # --- tools ---------------------------------------------------------------------------

    def _wrap(self, remote: Any) -> Tool:
        exposed = exposed_name(self.config.prefix, remote.name)
        schema = dict(remote.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        schema.pop("title", None)
        validator = _validator(schema)
        original = remote.name

        async def invoke(arguments: dict[str, Any]) -> Any:
            if validator is not None:
                problems = [
                    (".".join(str(p) for p in error.absolute_path), error.message)
                    for error in validator.iter_errors(arguments)
                ]
                if problems:
                    raise ToolArgumentsError(exposed, problems)
            return await self.call(original, arguments)

        description = remote.description or getattr(remote, "title", None) or remote.name
        return Tool(
            name=exposed,
            description=f"{description}",
            parameters=schema,
            invoke=invoke,
            timeout_s=self.config.call_timeout_s,
            idempotent=_idempotent(remote),
            source=self.source,
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        session = self._session
        if session is None:
            raise McpUnavailable(f"The {self.name} MCP server is not connected right now.")
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as exc:
            raise ToolError(f"The {self.name} MCP server refused the call: {exc.message}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self._broken(exc)
            raise McpUnavailable(f"The {self.name} MCP server stopped answering.") from None
        except Exception as exc:
            if _is_transport_failure(exc):
                self._broken(exc)
                raise McpUnavailable(f"The {self.name} MCP server stopped answering.") from None
            raise
        return render_result(result)

    def _broken(self, exc: BaseException) -> None:
        """A call found the connection dead: have the owner task reconnect now."""
        if self._session is not None:
            log.info("a call to MCP server %s failed (%s)", self.name, _describe(exc))
            self._session = None
            self._wake.set()


def exposed_name(prefix: str, name: str) -> str:
    """The tool's name for the model: prefixed, only [A-Za-z0-9_-], at most 64 characters."""
    return _UNSAFE.sub("_", prefix + name)[:64]


def _validator(schema: dict[str, Any]) -> Any:
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except jsonschema.SchemaError:
        return None  # an odd schema: leave validation to the server


def _is_transport_failure(exc: BaseException) -> bool:
    name = type(exc).__name__
    return "Connect" in name or "Transport" in name or "Network" in name or "Closed" in name


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def _idempotent(remote: Any) -> bool:
    """Whether a call may run again after a crash: only when the server says the tool
    reads only or is idempotent (MCP's defaults assume neither)."""
    hints = getattr(remote, "annotations", None)
    return bool(
        hints is not None
        and (getattr(hints, "read_only_hint", None) or getattr(hints, "idempotent_hint", None))
    )
