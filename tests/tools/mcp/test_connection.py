"""MCP servers written with the mcp SDK, over stdio (a subprocess) and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.fakes.mcp_servers import HttpMcpServer, stdio_command
from tests.waiting import until
from tools import ToolArgumentsError, ToolError
from tools.mcp import McpConnection, McpServerConfig
from tools.mcp.connection import McpUnavailable

FAST = {"connect_timeout_s": 10, "ping_interval_s": 0.3, "call_timeout_s": 5}


def stdio(**options: Any) -> McpServerConfig:
    command, args = stdio_command()
    return McpServerConfig(command=command, args=args, **{**FAST, **options})


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Any]]:
    started: list[McpConnection] = []

    async def make(config: McpServerConfig, name: str = "warehouse") -> McpConnection:
        connection = McpConnection(name, config, reconnect_max_s=0.5)
        connection.start()
        started.append(connection)
        await asyncio.wait_for(connection.connected.wait(), 30)
        return connection

    yield make
    for connection in started:
        await connection.stop()


async def test_discovery_over_stdio(connect: Callable[..., Any]) -> None:
    connection = await connect(stdio())
    names = sorted(connection.tools)
    assert "lookup_stock" in names and "slow_report" in names and "add_tool" in names
    tool = connection.tools["lookup_stock"]
    assert tool.description == "Stock of an item in the warehouse."
    assert tool.parameters["required"] == ["item"]
    assert tool.source == "mcp warehouse"
    assert tool.timeout_s == 5
    assert await tool.invoke({"item": "flour"}) == '{"result": "flour: 12 bags"}'


async def test_discovery_over_streamable_http(
    connect: Callable[..., Any], http_mcp_server: HttpMcpServer
) -> None:
    connection = await connect(McpServerConfig(url=http_mcp_server.url, **FAST))
    assert "lookup_stock" in connection.tools
    assert await connection.tools["lookup_stock"].invoke({"item": "sugar"}) == (
        '{"result": "sugar: 12 bags"}'
    )


async def test_allow_and_deny_lists_and_a_prefix(connect: Callable[..., Any]) -> None:
    connection = await connect(
        stdio(allow=["lookup_*", "inventory_*", "delete_*"], deny=["delete_*"], prefix="wh_")
    )
    assert sorted(connection.tools) == ["wh_inventory_totals", "wh_lookup_stock"]
    # The server is called by its own name.
    assert "flour: 12 bags" in await connection.tools["wh_lookup_stock"].invoke({"item": "flour"})


async def test_results_are_mapped_to_text(connect: Callable[..., Any]) -> None:
    connection = await connect(stdio())
    tools = connection.tools
    assert json.loads(await tools["inventory_totals"].invoke({})) == {"items": 1200, "low_stock": 3}
    assert json.loads(await tools["two_lines"].invoke({"item": "x"})) == {
        "result": ["first x", "second x"]
    }
    assert await tools["shelf_photo"].invoke({}) == "[image: image/png, 70 bytes]"
    with pytest.raises(ToolError, match="Error executing tool broken"):
        await tools["broken"].invoke({"reason": "r"})


async def test_arguments_are_checked_against_the_schema(connect: Callable[..., Any]) -> None:
    connection = await connect(stdio())
    with pytest.raises(ToolArgumentsError) as caught:
        await connection.tools["lookup_stock"].invoke({"item": 5})
    assert caught.value.problems == [("item", "5 is not of type 'string'")]


async def test_environment_substitution_and_working_directory(
    connect: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("TEST_WAREHOUSE_TOKEN", "secret-123")
    monkeypatch.setenv("PYTHONPATH", os.getcwd())
    connection = await connect(
        stdio(
            env={"WAREHOUSE_TOKEN": "${TEST_WAREHOUSE_TOKEN}", "PYTHONPATH": "${PYTHONPATH}"},
            cwd=str(tmp_path),
        )
    )
    assert json.loads(await connection.tools["whoami"].invoke({}))["result"] == (
        f"secret-123 @ {tmp_path}"
    )


async def test_a_tool_list_change_is_picked_up(connect: Callable[..., Any]) -> None:
    connection = await connect(stdio())
    assert "late_tool" not in connection.tools
    await connection.tools["add_tool"].invoke({"name": "late_tool"})
    await until(lambda: "late_tool" in connection.tools, 10)
    assert "late_tool works" in await connection.tools["late_tool"].invoke({})


async def test_a_killed_server_drops_its_tools_and_they_return(
    connect: Callable[..., Any], http_mcp_server: HttpMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tools.mcp.connection")
    connection = await connect(McpServerConfig(url=http_mcp_server.url, **FAST))
    stock = connection.tools["lookup_stock"]
    http_mcp_server.kill()
    await until(lambda: not connection.tools, 15)  # the ping notices; the tools drop out
    with pytest.raises(McpUnavailable, match="not connected"):
        await stock.invoke({"item": "flour"})
    await asyncio.sleep(1.5)  # several reconnection attempts while it is away
    outage_lines = [r for r in caplog.records if "is unavailable" in r.getMessage()]
    assert len(outage_lines) == 1  # one log line per outage, not per retry
    http_mcp_server.start()  # same port
    await until(lambda: "lookup_stock" in connection.tools, 20)
    assert "flour: 12 bags" in await connection.tools["lookup_stock"].invoke({"item": "flour"})
    assert any("is back" in r.getMessage() for r in caplog.records)


async def test_a_killed_stdio_server_is_started_again(connect: Callable[..., Any]) -> None:
    connection = await connect(stdio())
    pid = json.loads(await connection.tools["server_pid"].invoke({}))["result"]
    os.kill(pid, signal.SIGKILL)
    await until(lambda: not connection.tools, 15)
    await until(lambda: "server_pid" in connection.tools, 20)  # a new process
    new_pid = json.loads(await connection.tools["server_pid"].invoke({}))["result"]
    assert new_pid != pid


async def test_a_slow_server_does_not_hold_up_start(tmp_path: Any) -> None:
    hanging = tmp_path / "hang.py"
    hanging.write_text("import time\ntime.sleep(60)\n")
    import sys

    from tools.mcp import McpConfig, McpManager

    manager = McpManager(
        McpConfig(
            servers={
                "stuck": McpServerConfig(
                    command=sys.executable, args=[str(hanging)], connect_timeout_s=1
                )
            }
        )
    )
    started = time.monotonic()
    try:
        await manager.start()
        assert time.monotonic() - started < 4
        assert manager.tools() == []
    finally:
        await manager.stop()
