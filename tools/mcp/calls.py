"""Calls to one MCP server: a tool or a resource, made on a live client (the supervised
shared one, or a person's own session: :class:`Session`) from the caller's own task with the
SDK's ``Client.call_tool`` / ``read_resource``, the result in text.

The SDK runs the 2026 multi-round-trip loop (SEP-2322: a result that says ``input_required``
is answered, here through the same person-facing elicitation and sampling as a request the
server sends during a call, and the call is sent again with the answers and the server's
``requestState``), stamps the 2026 request metadata and standard headers, and mirrors the
tool's ``x-mcp-header`` arguments into headers.

No live session, or a call that finds the connection dead, is "unavailable" (and the dead
connection is marked broken at once, so the supervisor reconnects); a refusal or a bad
result is a :class:`ToolError` in words for the model.
"""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types
from mcp.client import Client, InputRequiredRoundsExceededError
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from tools.errors import ToolError
from tools.mcp.failures import describe, is_transport_failure
from tools.mcp.results import render_contents, render_result
from tools.mcp.server_requests import ServerRequests


class McpUnavailable(ToolError):
    kind = "McpServerUnavailable"


class Session(Protocol):
    """Where calls are made: the live client (None: not connected now), and what to tell
    when a call finds the connection dead (``Supervisor``, ``PersonalSession``)."""

    @property
    def client(self) -> Client | None: ...

    def mark_broken(self, reason: str) -> None: ...


class Caller:
    def __init__(self, name: str, session: Session, requests: ServerRequests) -> None:
        self.name = name
        self.session = session
        self.requests = requests

    def unavailable(self) -> McpUnavailable:
        return McpUnavailable(f"The MCP server {self.name} is unavailable right now.")

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        client = self.session.client
        if client is None:
            raise self.unavailable()
        with self.requests.serving(tool) as progress:
            try:
                result = await client.call_tool(tool, arguments, progress_callback=progress)
            except Exception as exc:
                raise self._call_failed(exc) from None
        return render_result(result, self.name)

    async def read_resource(self, uri: str) -> str:
        client = self.session.client
        if client is None:
            raise self.unavailable()
        try:
            result = await client.read_resource(uri)
        except Exception as exc:
            raise self._call_failed(exc) from None
        return render_contents(result.contents)

    def _call_failed(self, exc: Exception) -> ToolError:
        """What a request that raised ``exc`` tells the model; a dead connection is marked
        broken at once."""
        if isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED:
            self.session.mark_broken(f"a call found the connection closed ({exc.message})")
            return self.unavailable()
        if isinstance(exc, MCPError):
            return ToolError(f"The MCP server {self.name} refused the call: {exc.message}")
        if is_transport_failure(exc):
            self.session.mark_broken(f"a call failed: {describe(exc)}")
            return self.unavailable()
        if isinstance(exc, InputRequiredRoundsExceededError):
            return ToolError(
                f"The MCP server {self.name} kept asking for more input; the call was given up "
                f"after {exc.max_rounds} rounds."
            )
        if isinstance(exc, RuntimeError | ValidationError):  # e.g. breaks its output schema
            return ToolError(f"The MCP server {self.name} returned a bad result: {exc}")
        raise exc
