"""All servers of a process: who owns a tool name, and what a call to an away server gets."""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.fakes.mcp_servers import stdio_command
from tests.waiting import until
from tools.errors import ToolError
from tools.mcp.config import McpConfig
from tools.mcp.connection import McpUnavailable
from tools.mcp.manager import McpManager, McpNameClash

Make = Callable[..., Any]


def server(**settings: Any) -> dict[str, Any]:
    command, args = stdio_command()
    return {"command": command, "args": args, **settings}


@pytest.fixture
async def manager() -> AsyncIterator[Make]:
    made: list[McpManager] = []

    def make(**servers: dict[str, Any]) -> McpManager:
        built = McpManager(McpConfig.model_validate({"servers": servers, "reconnect_max_s": 1}))
        made.append(built)
        return built

    yield make
    for built in made:
        await built.stop()


async def test_two_servers_with_the_same_names_stop_start_up(manager: Make) -> None:
    both = manager(stock=server(), stock_copy=server())
    with pytest.raises(McpNameClash) as caught:
        await both.start()
    message = str(caught.value)
    assert message.startswith("MCP servers stock and stock_copy both offer ")
    assert "tools named add_tool, ask_model, big_photo," in message
    assert message.endswith(
        'give one of them a prefix, e.g. mcp.servers.stock_copy.prefix: "stock_copy_"'
    )


async def test_prefixes_keep_them_apart(manager: Make) -> None:
    both = manager(stock=server(prefix="a_"), stock_copy=server(prefix="b_"))
    await both.start()
    names = {tool.name for tool in both.tools()}
    assert {"a_lookup_stock", "b_lookup_stock"} <= names
    tool = both.get("b_lookup_stock")
    assert tool is not None and tool.source == "mcp stock_copy"
    assert await tool.invoke({"item": "oil"}) == "oil: 12 bags"


async def test_a_clash_that_appears_later_leaves_the_newer_tool_out_once(
    manager: Make, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tools.mcp.manager")
    # b lists "a_x_late" from the start; a adds a tool of that name later.
    both = manager(
        a=server(prefix="a_"), b=server(prefix="a_x_", env={"WAREHOUSE_EXTRA_TOOL": "late"})
    )
    await both.start()
    assert both.owners["a_x_late"] == "b"
    add = both.get("a_add_tool")
    assert add is not None
    await add.invoke({"name": "x_late"})
    await until(lambda: "a_x_late" in both.connections["a"].tools, 10)
    await add.invoke({"name": "x_later"})  # a re-lists again: still one warning
    await until(lambda: "a_x_later" in both.connections["a"].tools, 10)
    offered = [tool for tool in both.tools() if tool.name == "a_x_late"]
    assert [tool.source for tool in offered] == ["mcp b"]
    assert await offered[0].invoke({}) == "late from the start"
    warnings = [r.getMessage() for r in caplog.records if "both offer" in r.getMessage()]
    assert warnings == [
        "MCP servers b and a both offer a tool named a_x_late; leaving a's out (give one of "
        "them a prefix)"
    ]


async def test_a_call_to_an_away_servers_tool_says_it_is_unavailable(manager: Make) -> None:
    one = manager(stock=server(ping_interval_s=15))
    await one.start()
    server_pid = one.get("server_pid")
    assert server_pid is not None
    pid = int(await server_pid.invoke({}))
    os.kill(pid, signal.SIGKILL)
    await until(lambda: not one.tools(), 5)
    tool = one.get("lookup_stock")  # not offered now, but still known as the server's
    assert tool is not None
    with pytest.raises(McpUnavailable, match="The MCP server stock is unavailable right now"):
        await tool.invoke({"item": "flour"})
    await until(lambda: bool(one.tools()), 10)


async def test_reading_a_resource(manager: Make) -> None:
    one = manager(stock=server())
    await one.start()
    assert await one.read_resource("stock", "warehouse://notes/today") == (
        "Flour delivery at 10:00. Sugar is low."
    )
    with pytest.raises(ToolError, match=r"There is no MCP server named 'nope' \(servers: stock\)"):
        await one.read_resource("nope", "warehouse://notes/today")
    with pytest.raises(ToolError, match="refused the call"):
        await one.read_resource("stock", "warehouse://nothing")


async def test_a_server_that_cannot_start_is_reported(manager: Make) -> None:
    one = manager(
        gone={
            "command": sys.executable,
            "args": ["-c", "raise SystemExit(3)"],
            "connect_timeout_s": 5,
        }
    )
    await one.start()
    assert one.not_listed(one.connections["gone"]) == (
        "is not connected (MCPError: Connection closed)"
    )
