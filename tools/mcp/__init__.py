"""MCP servers as tool sources: stdio and streamable HTTP, one owner task per server."""

from tools.mcp.config import McpConfig, McpServerConfig
from tools.mcp.connection import McpConnection
from tools.mcp.manager import McpManager

__all__ = ["McpConfig", "McpConnection", "McpManager", "McpServerConfig"]
