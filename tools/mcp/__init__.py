"""MCP servers as tool sources: stdio and streamable HTTP, one owner task per server.

The names below are loaded on first use: the MCP SDK costs a process about half a second
of start-up, and a process with no MCP server configured never needs it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.mcp.config import McpConfig, McpServerConfig
    from tools.mcp.connection import McpConnection
    from tools.mcp.manager import McpManager

__all__ = ["McpConfig", "McpConnection", "McpManager", "McpServerConfig"]

_HOMES = {
    "McpConfig": "tools.mcp.config",
    "McpServerConfig": "tools.mcp.config",
    "McpConnection": "tools.mcp.connection",
    "McpManager": "tools.mcp.manager",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
