"""Tools the agent can call: ``from tools import tool``."""

from tools.approval import ApprovalToolset, Approver
from tools.definition import Tool, python_tool, tool
from tools.errors import ToolArgumentsError, ToolDefinitionError, ToolError, ToolUnavailable
from tools.registry import ToolRegistry, build_registry
from tools.toolset import StaticToolset, Toolset

__all__ = [
    "ApprovalToolset",
    "Approver",
    "StaticToolset",
    "Tool",
    "ToolArgumentsError",
    "ToolDefinitionError",
    "ToolError",
    "ToolRegistry",
    "ToolUnavailable",
    "Toolset",
    "build_registry",
    "python_tool",
    "tool",
]
