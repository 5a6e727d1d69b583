"""A channel's tools: a wrapper toolset that offers only what the channel's settings allow
(its ``tools`` globs, and the MCP servers in its ``mcp_servers``) and refuses any other call.

It only narrows: the surface composes it inside the role policy, so roles, switches and
approvals still decide about whatever it lets through. It is asked at listing and again at
every call, like the policy, so a call of a tool never offered cannot run. The MCP resource
tool names its server in its arguments: it is offered for the channel's servers only, and a
read of another server is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tools.definition import Tool
from tools.errors import ToolUnavailable
from tools.mcp.resource_tool import NAME as RESOURCE_TOOL
from tools.toolset import Toolset

NOT_OFFERED = "This channel's settings do not offer it."


class ChannelRules(Protocol):
    def allows_tool(self, name: str, server: str | None) -> bool:
        """Whether the channel offers ``name`` (of the MCP server ``server``; None: no
        server's)."""
        ...


def server_of(tool: Tool) -> str | None:
    """The MCP server ``tool`` comes from (its source ``mcp <server>``), else None."""
    kind, _, server = tool.source.partition(" ")
    return (server or None) if kind == "mcp" else None


class ChannelScope:
    def __init__(self, inner: Toolset, rules: ChannelRules) -> None:
        self.inner = inner
        self.rules = rules

    async def list_tools(self) -> Sequence[Tool]:
        scoped = (self._scoped(tool) for tool in await self.inner.list_tools())
        return [tool for tool in scoped if tool is not None]

    async def get_tool(self, name: str) -> Tool:
        scoped = self._scoped(await self.inner.get_tool(name))  # unknown: refused as unknown
        if scoped is None:
            raise ToolUnavailable.forbidden(name, NOT_OFFERED)
        return scoped

    def _scoped(self, tool: Tool) -> Tool | None:
        """``tool`` as the channel offers it, or None when it does not."""
        if tool.name == RESOURCE_TOOL and tool.source == "mcp":
            return self._resource_tool(tool)
        return tool if self.rules.allows_tool(tool.name, server_of(tool)) else None

    def _resource_tool(self, tool: Tool) -> Tool | None:
        """The resource tool for the channel's servers only (None: it offers none)."""
        properties = tool.parameters.get("properties") or {}
        listed = (properties.get("server") or {}).get("enum") or []
        servers = [s for s in listed if self.rules.allows_tool(tool.name, s)]
        if not servers:
            return None
        read = tool.invoke

        async def invoke(arguments: dict[str, Any]) -> Any:
            asked = arguments.get("server")
            if asked not in servers:
                why = f"This channel's settings do not offer the MCP server {asked!r}."
                raise ToolUnavailable.forbidden(tool.name, why)
            return await read(arguments)

        server = {**properties["server"], "enum": servers}
        parameters = {**tool.parameters, "properties": {**properties, "server": server}}
        return tool.replace(parameters=parameters, invoke=invoke)
