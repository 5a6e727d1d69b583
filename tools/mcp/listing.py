"""A server's tool list as the tools offered to the model: every page of ``tools/list``,
kept to the server's ``allow`` and ``deny`` lists (matched against either name:
``selection.py``), each wrapped as a :class:`Tool` whose invocation calls the server; a
tool that runs only as a task is left out (one warning per tool), and a name listed twice
keeps its first tool.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import mcp_types
from mcp.client import Client

from tools.definition import Tool
from tools.mcp.config import McpServerConfig
from tools.mcp.remote_tools import Call, needs_tasks, wrap_tool
from tools.mcp.selection import taken

log = logging.getLogger(__name__)


class ToolListing:
    def __init__(self, name: str, config: McpServerConfig, call: Call) -> None:
        self.name = name
        self.config = config
        self.call = call  # what an offered tool's invocation runs
        self._warned_tasks: set[str] = set()

    @property
    def source(self) -> str:
        return f"mcp {self.name}"

    async def tools(self, client: Client) -> dict[str, Tool]:
        """The tools to offer, by the name the model sees (the SDK has already dropped a tool
        whose ``x-mcp-header`` declarations are invalid, and noted the rest, so a call
        mirrors them into its headers)."""
        return self.offered(await listed(client))

    def offered(self, remotes: Sequence[Any], call: Call | None = None) -> dict[str, Tool]:
        """``remotes`` (a server's listed ``mcp_types.Tool``s) as the tools to offer, kept to
        the rules above; each invocation runs ``call`` (default: this listing's)."""
        tools: dict[str, Tool] = {}
        for remote in remotes:
            config = self.config
            if not taken(config.allow, config.deny, config.prefix, remote.name):
                continue
            if needs_tasks(remote):
                if remote.name not in self._warned_tasks:
                    self._warned_tasks.add(remote.name)
                    log.warning(
                        "MCP server %s: the tool %s runs only as a task, which this bot does "
                        "not support; leaving it out",
                        self.name,
                        remote.name,
                    )
                continue
            tool = wrap_tool(
                remote,
                self.config.prefix,
                self.config.call_timeout_s,
                self.source,
                call or self.call,
                self.config.approval,
            )
            if tool.name in tools:
                log.warning("MCP server %s lists %s twice; keeping the first", self.name, tool.name)
                continue
            tools[tool.name] = tool
        return tools


async def listed(
    client: Client,
    first: mcp_types.ListToolsResult | None = None,
    pages: list[mcp_types.ListToolsResult] | None = None,
) -> list[mcp_types.Tool]:
    """Every page of the server's ``tools/list``, fetched afresh; after ``first`` (a first
    page already in hand) only the pages that follow it. Each page (``first`` included) is
    added to ``pages`` when given."""
    page = first or await client.list_tools(cache_mode="refresh")
    found = list(page.tools)
    if pages is not None:
        pages.append(page)
    while page.next_cursor:
        page = await client.list_tools(cursor=page.next_cursor, cache_mode="refresh")
        found.extend(page.tools)
        if pages is not None:
            pages.append(page)
    return found
