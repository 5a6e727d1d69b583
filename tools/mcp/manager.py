"""All configured MCP servers of a process, as one source of tools for the registry."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from tools.definition import Tool
from tools.mcp.config import McpConfig
from tools.mcp.connection import McpConnection

log = logging.getLogger(__name__)


class McpManager:
    def __init__(self, config: McpConfig) -> None:
        self.connections = {
            name: McpConnection(name, server, reconnect_max_s=config.reconnect_max_s)
            for name, server in config.servers.items()
        }

    async def start(self) -> None:
        """Connect every server; wait for each at most its ``connect_timeout_s``.

        A slow or absent server does not hold up start-up: it keeps trying in the background.
        """
        for connection in self.connections.values():
            connection.start()
        waits = [
            asyncio.wait_for(c.tried.wait(), c.config.connect_timeout_s)
            for c in self.connections.values()
        ]
        for connection, outcome in zip(
            self.connections.values(),
            await asyncio.gather(*waits, return_exceptions=True),
            strict=True,
        ):
            if isinstance(outcome, BaseException) or not connection.connected.is_set():
                log.warning(
                    "MCP server %s is not connected yet; starting without its tools",
                    connection.name,
                )

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))

    def tools(self) -> Sequence[Tool]:
        return [tool for c in self.connections.values() for tool in c.tools.values()]

    def get(self, name: str) -> Tool | None:
        for connection in self.connections.values():
            tool = connection.tools.get(name)
            if tool is not None:
                return tool
        return None
