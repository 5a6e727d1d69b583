"""All configured MCP servers of a process, as one source of tools for the registry.

Tool names are owned per server (``tools/mcp/names.py``): two servers offering the same name
at start-up is an error; a clash that appears later leaves the newer tool out, with one
warning.

A server that signs each person in (``auth: oauth``) has no shared connection: it is a
``PersonalServer`` in :attr:`McpManager.personal` (``tools/mcp/oauth/personal.py``), whose
tools are each person's own and come through ``PersonalToolset``, never the registry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tools.definition import Tool
from tools.errors import ToolDefinitionError, ToolError
from tools.mcp.config import McpConfig
from tools.mcp.names import Clash, assign, clash_message

if TYPE_CHECKING:
    import httpx2

    from tools.mcp.connection import McpConnection
    from tools.mcp.oauth.personal import PersonalServer, PersonalWiring
    from tools.mcp.sampling import Sampler

log = logging.getLogger(__name__)


class McpNameClash(ToolDefinitionError):
    """Two servers offer the same tool name and no prefix separates them."""


class SignInNotWired(ToolDefinitionError):
    """A server signs each person in, and this process was given no way to sign them in."""


class McpManager:
    def __init__(
        self,
        config: McpConfig,
        auth: Mapping[str, httpx2.Auth] | None = None,
        personal: PersonalWiring | None = None,
    ) -> None:
        """``auth``: by server name, what signs that server's HTTP requests (e.g. the SDK's
        ``mcp.client.auth.OAuthClientProvider``); a server not named there sends none.
        ``personal``: how people sign in to the servers with ``auth: oauth`` (needed when
        there is one: :class:`SignInNotWired` otherwise)."""
        auth = auth or {}
        oauth = {name: s for name, s in config.servers.items() if s.auth == "oauth"}
        shared = {name: s for name, s in config.servers.items() if s.auth != "oauth"}
        if oauth and personal is None:
            raise SignInNotWired(
                f"MCP server {', '.join(oauth)} signs each person in (auth: oauth), and this "
                "process was started without the sign-in wiring for it"
            )
        self.personal: dict[str, PersonalServer] = {}
        if oauth and personal is not None:
            from tools.mcp.oauth.personal import PersonalServer

            self.personal = {
                name: PersonalServer(
                    name,
                    server,
                    personal,
                    elicitation_timeout_s=config.elicitation_timeout_s,
                )
                for name, server in oauth.items()
            }
        if shared:  # the MCP SDK is loaded only for a configured server
            from tools.mcp.connection import McpConnection
        self.connections = {
            name: McpConnection(
                name,
                server,
                reconnect_max_s=config.reconnect_max_s,
                on_change=self._changed,
                elicitation_timeout_s=config.elicitation_timeout_s,
                auth=auth.get(name),
            )
            for name, server in shared.items()
        }
        self.owners: dict[str, str] = {}  # tool name -> the server whose tool it is
        self._warned: set[tuple[str, str]] = set()
        self._clashes: list[Clash] = []
        self._starting = False  # clashes then are a start-up error, not warnings

    def use_sampler(self, sampler: Sampler) -> None:
        """Serve sampling with ``sampler`` for servers with ``sampling: true`` (call before
        :meth:`start`)."""
        for connection in self.connections.values():
            connection.sampler = sampler
        for server in self.personal.values():
            server.sampler = sampler

    async def start(self) -> None:
        """Connect every server; wait for each at most its ``connect_timeout_s``. A server
        that signs each person in is asked for its token-less listing (as long).

        A slow or absent server does not hold up start-up: it keeps trying in the background.
        Raises :class:`McpNameClash` when servers that listed their tools offer one name.
        """
        listings = [asyncio.ensure_future(s.anonymous()) for s in self.personal.values()]
        self._starting = True
        for connection in self.connections.values():
            connection.start()
        waits = [
            asyncio.wait_for(c.tried.wait(), c.config.connect_timeout_s)
            for c in self.connections.values()
        ]
        await asyncio.gather(*waits, return_exceptions=True)
        # What connected during start-up is owned in the config's order, not by who was
        # quicker; later clashes keep the older owner.
        self.owners = {}
        self._changed()
        self._starting = False
        for connection in self.connections.values():
            if not connection.connected.is_set():
                log.warning(
                    "MCP server %s %s; starting without its tools, which will appear when it "
                    "is ready",
                    connection.name,
                    self.not_listed(connection),
                )
        await asyncio.gather(*listings)
        if self._clashes:
            raise McpNameClash(clash_message(self._clashes))

    async def stop(self) -> None:
        await asyncio.gather(
            *(c.stop() for c in self.connections.values()),
            *(s.close() for s in self.personal.values()),
        )

    def not_listed(self, connection: McpConnection) -> str:
        """Why a server's tools are not there, in words."""
        if connection.starting_since is not None and connection.last_error is None:
            waited = time.monotonic() - connection.starting_since
            return f"is still starting after {waited:.0f} s"
        return f"is not connected ({connection.last_error or 'not tried yet'})"

    def tools(self) -> Sequence[Tool]:
        return [
            tool
            for connection in self.connections.values()
            for tool in connection.tools.values()
            if self.owners.get(tool.name) == connection.name
        ]

    def get(self, name: str) -> Tool | None:
        """The tool, also one of a server that is away now (its call says unavailable)."""
        owner = self.owners.get(name)
        if owner is None:
            return None
        connection = self.connections[owner]
        return connection.tools.get(name) or connection.known.get(name)

    async def read_resource(self, server: str, uri: str) -> str:
        if server in self.personal:
            raise ToolError(
                f"The MCP server {server} signs each person in; its resources are read through "
                "its tools."
            )
        connection = self.connections.get(server)
        if connection is None:
            names = ", ".join(self.connections) or "none"
            raise ToolError(f"There is no MCP server named {server!r} (servers: {names}).")
        return await connection.read_resource(uri)

    def _changed(self) -> None:
        offered = {name: list(c.known) for name, c in self.connections.items()}
        self.owners, clashes = assign(self.owners, offered)
        self._clashes = clashes
        for clash in clashes:
            if (clash.name, clash.left_out) in self._warned:
                continue
            self._warned.add((clash.name, clash.left_out))
            if self._starting:
                continue
            log.warning(
                "MCP servers %s and %s both offer a tool named %s; leaving %s's out (give one "
                "of them a prefix)",
                clash.kept,
                clash.left_out,
                clash.name,
                clash.left_out,
            )
