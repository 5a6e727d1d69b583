"""A channel's tools (permissions/channel_scope.py): only what its settings allow is offered,
a call outside them is refused at run time, and the MCP resource tool reads only the
channel's servers."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import pytest

from permissions.channel_scope import NOT_OFFERED, ChannelScope, server_of
from tools.definition import Tool, tool
from tools.errors import ToolUnavailable
from tools.mcp.resource_tool import resource_tool
from tools.toolset import StaticToolset


@dataclass(frozen=True)
class Rules:
    tools: tuple[str, ...] = ("*",)
    servers: tuple[str, ...] = ("*",)

    def allows_tool(self, name: str, server: str | None) -> bool:
        if not any(fnmatchcase(name, glob) for glob in self.tools):
            return False
        return server is None or any(fnmatchcase(server, glob) for glob in self.servers)


@tool
def get_time() -> str:
    """The time."""
    return "noon"


@tool
def search_docs(query: str) -> str:
    """Search the docs."""
    return query


def mcp_tool(name: str, server: str) -> Tool:
    async def invoke(arguments: dict[str, Any]) -> Any:
        return name

    return Tool(name=name, description=name, parameters={}, invoke=invoke, source=f"mcp {server}")


async def read(server: str, uri: str) -> str:
    return f"{server}:{uri}"


def toolset() -> StaticToolset:
    return StaticToolset(
        [
            get_time,
            search_docs,
            mcp_tool("zd_ticket", "zendesk"),
            mcp_tool("gh_issue", "github"),
            resource_tool(["zendesk", "github"], read),
        ]
    )


def names(tools: Any) -> list[str]:
    return [t.name for t in tools]


def test_a_tools_server_is_named_by_its_source() -> None:
    assert server_of(mcp_tool("x", "zendesk")) == "zendesk"
    assert server_of(get_time) is None
    assert server_of(resource_tool(["a"], read)) is None  # its server is in its arguments


async def test_only_what_the_channel_allows_is_offered_and_the_rest_refused_at_run_time() -> None:
    scoped = ChannelScope(toolset(), Rules(tools=("search_*", "zd_*"), servers=("zendesk",)))
    assert names(await scoped.list_tools()) == ["search_docs", "zd_ticket"]
    assert (await scoped.get_tool("search_docs")).name == "search_docs"
    for name in ("get_time", "gh_issue", "read_mcp_resource"):
        with pytest.raises(ToolUnavailable) as refused:
            await scoped.get_tool(name)
        assert refused.value.kind == "ToolNotAllowed"
        assert NOT_OFFERED in str(refused.value)
    with pytest.raises(ToolUnavailable) as unknown:
        await scoped.get_tool("nope")
    assert unknown.value.kind == "UnknownTool"


async def test_a_servers_tools_go_with_the_server() -> None:
    scoped = ChannelScope(toolset(), Rules(servers=("github",)))
    offered = names(await scoped.list_tools())
    assert offered == ["get_time", "search_docs", "gh_issue", "read_mcp_resource"]


async def test_the_resource_tool_reads_only_the_channels_servers() -> None:
    scoped = ChannelScope(toolset(), Rules(servers=("zendesk",)))
    offered = {t.name: t for t in await scoped.list_tools()}
    schema = offered["read_mcp_resource"].parameters["properties"]["server"]
    assert schema["enum"] == ["zendesk"]
    resource = await scoped.get_tool("read_mcp_resource")
    assert await resource.invoke({"server": "zendesk", "uri": "z://1"}) == "zendesk:z://1"
    with pytest.raises(ToolUnavailable) as refused:
        await resource.invoke({"server": "github", "uri": "g://1"})
    assert "'github'" in str(refused.value)


async def test_no_narrowing_offers_everything_as_it_is() -> None:
    inner = toolset()
    scoped = ChannelScope(inner, Rules())
    assert names(await scoped.list_tools()) == names(await inner.list_tools())
    assert await scoped.get_tool("get_time") is get_time
