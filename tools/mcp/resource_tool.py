"""``read_mcp_resource(server, uri)``: the model reads a resource an MCP server linked to or
embedded in a tool result. A tool like any other: roles, switches and the audit apply."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tools.definition import Tool
from tools.errors import ToolArgumentsError
from tools.hints import ToolHints

NAME = "read_mcp_resource"

Read = Callable[[str, str], Awaitable[str]]


def resource_tool(servers: Sequence[str], read: Read, timeout_s: float = 30.0) -> Tool:
    """The tool, for the configured ``servers``; ``read(server, uri)`` reads."""

    async def invoke(arguments: dict[str, Any]) -> Any:
        problems = [
            (key, "is required and must be a non-empty string")
            for key in ("server", "uri")
            if not isinstance(arguments.get(key), str) or not arguments[key]
        ]
        problems += [(k, "is not a parameter") for k in arguments if k not in ("server", "uri")]
        if problems:
            raise ToolArgumentsError(NAME, problems)
        return await read(arguments["server"], arguments["uri"])

    return Tool(
        name=NAME,
        description=(
            "Read a resource of an MCP server by its URI, e.g. one a tool result linked to "
            "or embedded. Binary contents are described, not returned."
        ),
        parameters={
            "type": "object",
            "properties": {
                "server": {
                    "type": "string",
                    "enum": list(servers),
                    "description": "The MCP server the resource belongs to.",
                },
                "uri": {"type": "string", "description": "The resource's URI."},
            },
            "required": ["server", "uri"],
            "additionalProperties": False,
        },
        invoke=invoke,
        timeout_s=timeout_s,
        source="mcp",
        title="Read an MCP resource",
        hints=ToolHints(read_only=True, open_world=True),
    )
