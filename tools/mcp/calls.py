"""Calls to one MCP server: a tool or a resource, made on the supervised session from the
caller's own task, the result in text.

No live session, or a call that finds the connection dead, is "unavailable" (and the dead
connection is marked broken at once, so the supervisor reconnects); a refusal or a bad
result is a :class:`ToolError` in words for the model.
"""

from __future__ import annotations

from typing import Any

import mcp_types
from mcp.shared.exceptions import MCPError

from tools.errors import ToolError
from tools.mcp.failures import describe, is_transport_failure
from tools.mcp.results import render_contents, render_result
from tools.mcp.server_requests import ServerRequests
from tools.mcp.supervisor import Supervisor


class McpUnavailable(ToolError):
    kind = "McpServerUnavailable"


class Caller:
    def __init__(self, name: str, supervisor: Supervisor, requests: ServerRequests) -> None:
        self.name = name
        self.supervisor = supervisor
        self.requests = requests

    def unavailable(self) -> McpUnavailable:
        return McpUnavailable(f"The MCP server {self.name} is unavailable right now.")

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        session = self.supervisor.session
        if session is None:
            raise self.unavailable()
        with self.requests.serving(tool) as progress:
            try:
                result = await session.call_tool(tool, arguments, progress_callback=progress)
            except Exception as exc:
                raise self._call_failed(exc) from None
        return render_result(result, self.name)

    async def read_resource(self, uri: str) -> str:
        session = self.supervisor.session
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
            self.supervisor.mark_broken(f"a call found the connection closed ({exc.message})")
            return self.unavailable()
        if isinstance(exc, MCPError):
            return ToolError(f"The MCP server {self.name} refused the call: {exc.message}")
        if is_transport_failure(exc):
            self.supervisor.mark_broken(f"a call failed: {describe(exc)}")
            return self.unavailable()
        if isinstance(exc, RuntimeError):  # e.g. a result that breaks its output schema
            return ToolError(f"The MCP server {self.name} returned a bad result: {exc}")
        raise exc
