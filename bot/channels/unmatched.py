"""Start-up warnings about the ``channels:`` section (pure): a tool glob that matches no tool,
an ``mcp_servers`` name that is no configured server. Warnings, never a stop (as for roles'
patterns, ``permissions/validation.py``): a glob that matches nothing lets nothing through, a
tool may come later (an MCP server still starting), and a server may be added later."""

from __future__ import annotations

from collections.abc import Collection

from bot.channels.config import ChannelsConfig
from permissions.patterns import matches_any


def unmatched_names(
    channels: ChannelsConfig, tool_names: Collection[str], servers: Collection[str]
) -> list[str]:
    """A warning for each tool glob of a channel entry that matches none of ``tool_names``,
    and each server name that matches none of ``servers`` (the configured MCP servers)."""
    known_tools = ", ".join(sorted(tool_names)) or "none"
    known_servers = ", ".join(sorted(servers)) or "none"
    found = []
    for key, entry in channels.items():
        for index, pattern in enumerate(entry.tools or ()):
            if not matches_any(pattern, tool_names):
                does = "denies" if pattern.startswith("!") else "lets through"
                found.append(
                    f"channels.{key}.tools[{index}]: {pattern!r} matches no tool (tools: "
                    f"{known_tools}); it {does} nothing"
                )
        for index, name in enumerate(entry.mcp_servers or ()):
            if not matches_any(name, servers):
                found.append(
                    f"channels.{key}.mcp_servers[{index}]: {name!r} is no configured MCP "
                    f"server (servers: {known_servers}); no tool comes from it"
                )
    return found
