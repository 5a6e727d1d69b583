"""The sign-in gate, and the toolset that offers each person their own servers' tools.

- :class:`PersonalToolset` (innermost): the registry's tools plus, for one person (the
  account it is built for), the tools of every MCP server that signs each person in
  (``PersonalServer.tools_for``): their own list when connected, else "connect to use"
  copies or one ``connect`` tool. A personal tool whose name a registry tool (or an
  earlier personal server) has is left out for that person, with one warning per server
  and name. Roles, switches, approval and withholding wrap it and judge its tools by name,
  like any other.
- :class:`SignInToolset` (outermost, before approval): a call of a personal server's tool
  first has its arguments checked (nobody is asked about an invalid call), then waits for
  its person to be connected (``Connector.ready``: it may park the turn with
  ``CallDeferred``, or refuse with a ``ToolError`` the model reads), then runs what is
  inside (approval, then the call). A server that refuses the call at the HTTP level
  (``SignInRequired``: 401, or 403 for more scope) did not start it: the approval wrapper
  gives its approval back and the connector asks the person to sign in again.

How a surface signs a person in is its :class:`Connector` (the Slack turn's parks the turn
and posts a card; the console's prints a link and waits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from tools.definition import Tool
from tools.errors import ToolUnavailable
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.pending import SignInRequired
from tools.toolset import Toolset

if TYPE_CHECKING:
    from tools.mcp.oauth.personal import PersonalServer


class Connector(Protocol):
    """How a surface gets its requester connected to a server that signs each person in."""

    async def ready(self, tool: Tool, server: str) -> None:
        """Return when the requester may call ``server`` now; raise
        ``tools.errors.CallDeferred`` (the turn waits until the person connects) or a
        ``ToolError`` the model reads (``errors.NotConnected``, ``SignInFailed``,
        ``SignInUnavailable``)."""
        ...

    async def sign_in(self, tool: Tool, server: str, needed: SignInRequired) -> NoReturn:
        """The server refused the call before it started (401, or 403 for more scope): ask
        the person again with ``needed.pending``; raise ``CallDeferred`` or a ``ToolError``."""
        ...


def server_of(tool: Tool, personal: Mapping[str, PersonalServer]) -> str | None:
    """The personal server ``tool`` belongs to (its source is ``mcp <server>``), if any."""
    kind, _, name = tool.source.partition(" ")
    if kind != "mcp" or name not in personal:
        return None
    return name


class SignInToolset:
    """``inner``'s tools, each personal server's tool gated on its person's connection."""

    def __init__(
        self, inner: Toolset, connector: Connector, personal: Mapping[str, PersonalServer]
    ) -> None:
        self.inner = inner
        self.connector = connector
        self.personal = personal

    async def list_tools(self) -> Sequence[Tool]:
        return await self.inner.list_tools()

    async def get_tool(self, name: str) -> Tool:
        tool = await self.inner.get_tool(name)
        server = server_of(tool, self.personal)
        if server is None:
            return tool
        connector, run = self.connector, tool.invoke

        async def invoke(arguments: dict[str, Any]) -> Any:
            await tool.check_arguments(arguments)  # an invalid call waits for nobody
            await connector.ready(tool, server)
            try:
                return await run(arguments)  # approval (when needed), then the call
            except SignInRequired as needed:  # refused at the door: the call did not start
                await connector.sign_in(tool, server, needed)

        return tool.replace(invoke=invoke)


class PersonalToolset:
    """``inner`` (the registry) plus the personal servers' tools for ``account``."""

    def __init__(
        self, inner: Toolset, personal: Mapping[str, PersonalServer], account: Account
    ) -> None:
        self.inner = inner
        self.personal = personal
        self.account = account

    async def list_tools(self) -> Sequence[Tool]:
        tools = list(await self.inner.list_tools())
        taken = {tool.name for tool in tools}
        for server in self.personal.values():
            for tool in await server.tools_for(self.account):
                if tool.name in taken:
                    server.left_out(tool.name)
                    continue
                taken.add(tool.name)
                tools.append(tool)
        return tools

    async def get_tool(self, name: str) -> Tool:
        try:
            return await self.inner.get_tool(name)
        except ToolUnavailable as exc:
            if exc.kind != "UnknownTool":
                raise
        for server in self.personal.values():
            tool = await server.tool_for(self.account, name)
            if tool is not None:
                return tool
        raise ToolUnavailable.unknown(name)
