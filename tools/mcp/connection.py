"""One MCP server as the rest of the bot sees it: :class:`McpConnection`, its tools, its
status and its calls, put together from the parts that do the work:

- ``supervisor.py``: the owner task that keeps the SDK's client up (connect and negotiate,
  list, ping, reconnect with backoff, fall back from streamable HTTP to SSE only where the
  URL serves no streamable HTTP, one log line per outage);
- ``listing.py``: the server's tool list as the tools offered;
- ``calls.py``: tool calls and resource reads, made in the callers' tasks on that session;
- ``server_requests.py``: what the server asks while a call runs (progress, sampling,
  elicitation), served for that call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx2

from tools.definition import Tool
from tools.mcp.calls import Caller, McpUnavailable
from tools.mcp.config import McpServerConfig, Transport
from tools.mcp.failures import describe
from tools.mcp.listing import ToolListing
from tools.mcp.sampling import Sampler
from tools.mcp.server_requests import ServerRequests
from tools.mcp.supervisor import Supervisor

__all__ = ["McpConnection", "McpUnavailable", "describe"]


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
        auth: httpx2.Auth | None = None,
    ) -> None:
        """``auth`` signs the connection's HTTP requests (e.g. the SDK's
        ``mcp.client.auth.OAuthClientProvider``)."""
        self.name = name
        self.config = config
        self._requests = ServerRequests(
            name, config, sampler=sampler, elicitation_timeout_s=elicitation_timeout_s
        )
        self._supervisor = Supervisor(
            name,
            config,
            ToolListing(name, config, self.call),
            self._requests,
            reconnect_max_s=reconnect_max_s,
            on_change=on_change,
            auth=auth,
        )
        self._caller = Caller(name, self._supervisor, self._requests)

    @property
    def tools(self) -> dict[str, Tool]:
        """Offered now, by the name the model sees."""
        return self._supervisor.tools

    @property
    def known(self) -> dict[str, Tool]:
        """As last listed: a call while the server is away is "unavailable"."""
        return self._supervisor.known

    @property
    def connected(self) -> asyncio.Event:
        return self._supervisor.connected

    @property
    def tried(self) -> asyncio.Event:
        """Set once the first attempt has succeeded or failed."""
        return self._supervisor.tried

    @property
    def last_error(self) -> str | None:
        return self._supervisor.last_error

    @property
    def failures(self) -> int:
        """Attempts that failed since it was last up."""
        return self._supervisor.failures

    @property
    def starting_since(self) -> float | None:
        """The monotonic time the running attempt began."""
        return self._supervisor.starting_since

    @property
    def kind(self) -> Transport:
        return self._supervisor.kind

    @property
    def protocol(self) -> str | None:
        """The protocol version negotiated when the server was last up (e.g. 2026-07-28)."""
        return self._supervisor.protocol

    @property
    def on_change(self) -> Callable[[], None] | None:
        return self._supervisor.on_change

    @on_change.setter
    def on_change(self, on_change: Callable[[], None] | None) -> None:
        self._supervisor.on_change = on_change

    @property
    def sampler(self) -> Sampler | None:
        return self._requests.sampler

    @sampler.setter
    def sampler(self, sampler: Sampler | None) -> None:
        self._requests.sampler = sampler

    def start(self) -> None:
        self._supervisor.start()

    async def stop(self) -> None:
        await self._supervisor.stop()

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        return await self._caller.call(tool, arguments)

    async def read_resource(self, uri: str) -> str:
        return await self._caller.read_resource(uri)
