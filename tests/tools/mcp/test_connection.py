"""MCP servers written with the mcp SDK, over stdio (a subprocess), streamable HTTP and SSE."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.mcp_servers import HttpMcpServer, stdio_command
from tests.waiting import until
from tools import ToolArgumentsError, ToolError
from tools.call_context import CallScope, Requester, calling
from tools.mcp.config import McpServerConfig
from tools.mcp.connection import McpConnection, McpUnavailable
from tools.mcp.identity import client_info

FAST = {"connect_timeout_s": 10, "ping_interval_s": 0.3, "call_timeout_s": 5}

Connect = Callable[..., Any]


def stdio(*options: str, **settings: Any) -> McpServerConfig:
    command, args = stdio_command(*options)
    return McpServerConfig(command=command, args=args, **{**FAST, **settings})


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    started: list[McpConnection] = []

    async def make(
        config: McpServerConfig, name: str = "warehouse", wait: bool = True, **options: Any
    ) -> McpConnection:
        options.setdefault("reconnect_max_s", 0.5)
        connection = McpConnection(name, config, **options)
        connection.start()
        started.append(connection)
        if wait:
            await asyncio.wait_for(connection.connected.wait(), 30)
        return connection

    yield make
    for connection in started:
        await connection.stop()


async def test_discovery_over_stdio(connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    connection = await connect(stdio())
    names = sorted(connection.tools)
    assert "lookup_stock" in names and "slow_report" in names and "add_tool" in names
    tool = connection.tools["lookup_stock"]
    assert tool.description == "Stock of an item in the warehouse."
    assert tool.parameters["required"] == ["item"]
    assert tool.source == "mcp warehouse"
    assert tool.timeout_s == 5
    assert await tool.invoke({"item": "flour"}) == "flour: 12 bags"
    # Title, annotations and the output schema are kept for people to read.
    pallets = connection.tools["count_pallets"]
    assert pallets.title == "Count pallets"
    assert pallets.hints.labels() == ["read-only", "idempotent"]
    assert pallets.idempotent
    delete = connection.tools["delete_everything"]
    assert delete.hints.labels() == ["destructive", "closed-world"]
    assert not delete.idempotent
    assert connection.tools["inventory_totals"].output_schema is not None


async def test_a_tool_that_runs_only_as_a_task_is_left_out_with_one_warning(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tools.mcp")
    connection = await connect(stdio())
    assert "batch_export" not in connection.tools
    await connection.tools["add_tool"].invoke({"name": "task_free"})  # the server re-lists
    await until(lambda: "task_free" in connection.tools, 10)
    warnings = [r.getMessage() for r in caplog.records if "batch_export" in r.getMessage()]
    assert warnings == [
        "MCP server warehouse: the tool batch_export runs only as a task, which this bot does "
        "not support; leaving it out"
    ]


async def test_the_client_introduces_itself_and_declares_what_it_serves(connect: Connect) -> None:
    identity = client_info()
    assert identity.name == "slack-agent" and identity.version == "0.1.0"
    plain = await connect(stdio())
    assert await plain.tools["client_info"].invoke({}) == "slack-agent 0.1.0; elicitation"

    class NoModel:
        async def sample(self, request: Any) -> Any:
            raise AssertionError("not asked")

    sampling = await connect(stdio(sampling=True), "sampler", sampler=NoModel())
    assert await sampling.tools["client_info"].invoke({}) == (
        "slack-agent 0.1.0; sampling, elicitation"
    )


async def test_discovery_over_streamable_http(
    connect: Connect, http_mcp_server: HttpMcpServer
) -> None:
    connection = await connect(McpServerConfig(url=http_mcp_server.url, **FAST))
    assert connection.kind == "streamable_http"
    assert await connection.tools["lookup_stock"].invoke({"item": "sugar"}) == "sugar: 12 bags"


async def test_an_sse_server(connect: Connect, sse_mcp_server: HttpMcpServer) -> None:
    connection = await connect(McpServerConfig(url=sse_mcp_server.url, transport="sse", **FAST))
    assert connection.kind == "sse"
    assert await connection.tools["lookup_stock"].invoke({"item": "salt"}) == "salt: 12 bags"


async def test_a_url_without_a_transport_falls_back_to_sse(
    connect: Connect, sse_mcp_server: HttpMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tools.mcp")
    connection = await connect(McpServerConfig(url=sse_mcp_server.url, **FAST))
    assert connection.kind == "sse"
    assert await connection.tools["lookup_stock"].invoke({"item": "rice"}) == "rice: 12 bags"
    assert any("no streamable HTTP at its URL" in r.getMessage() for r in caplog.records)


async def test_an_explicit_streamable_http_transport_says_why_it_fails(
    connect: Connect, sse_mcp_server: HttpMcpServer
) -> None:
    connection = await connect(
        McpServerConfig(url=sse_mcp_server.url, transport="streamable_http", **FAST), wait=False
    )
    await until(lambda: connection.last_error is not None, 10)
    assert not connection.connected.is_set()
    assert connection.kind == "streamable_http"
    assert connection.last_error == (
        "MCPError: Server returned an error response (the server answered HTTP 405 Method Not "
        "Allowed); if the URL is an SSE server, set `transport: sse`"
    )


async def test_a_server_people_sign_in_to_never_falls_back_to_sse(
    connect: Connect, sse_mcp_server: HttpMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    """auth: oauth with a bare URL: the server's 405 is its answer over streamable HTTP,
    attempt after attempt, never a reason to try SSE (nor advice to)."""
    caplog.set_level(logging.INFO, logger="tools.mcp")
    connection = await connect(
        McpServerConfig(url=sse_mcp_server.url, auth="oauth", **FAST), wait=False
    )
    await until(lambda: connection.failures >= 2, 10)
    assert not connection.connected.is_set()
    assert connection.kind == "streamable_http"
    assert connection.last_error == (
        "MCPError: Server returned an error response (the server answered HTTP 405 Method Not "
        "Allowed)"
    )
    assert not any("trying SSE" in r.getMessage() for r in caplog.records)


async def test_allow_and_deny_lists_and_a_prefix(connect: Connect) -> None:
    connection = await connect(
        stdio(allow=["lookup_*", "inventory_*", "delete_*"], deny=["delete_*"], prefix="wh_")
    )
    assert sorted(connection.tools) == ["wh_inventory_totals", "wh_lookup_stock"]
    # The server is called by its own name.
    assert "flour: 12 bags" in await connection.tools["wh_lookup_stock"].invoke({"item": "flour"})


async def test_results_are_mapped_to_text(connect: Connect) -> None:
    connection = await connect(stdio())
    tools = connection.tools
    assert json.loads(await tools["inventory_totals"].invoke({})) == {"items": 1200, "low_stock": 3}
    assert await tools["two_lines"].invoke({"item": "x"}) == "first x\nsecond x"
    assert await tools["shelf_photo"].invoke({}) == "[image: image/png, 70 bytes]"
    assert await tools["big_photo"].invoke({}) == "[image: image/png, 344 KB]"
    report = await tools["stock_report"].invoke({})
    assert report.startswith("3 items are low on stock.\nStructured content: ")
    assert json.loads(report.split("Structured content: ")[1])["low"] == ["flour", "sugar", "yeast"]
    linked = await tools["report_link"].invoke({})
    assert "[resource link: today's notes warehouse://notes/today (text/plain)]" in linked
    assert await connection.read_resource("warehouse://notes/today") == (
        "Flour delivery at 10:00. Sugar is low."
    )
    with pytest.raises(ToolError, match="Error executing tool broken"):
        await tools["broken"].invoke({"reason": "r"})


async def test_arguments_are_checked_against_the_schema(connect: Connect) -> None:
    connection = await connect(stdio())
    with pytest.raises(ToolArgumentsError) as caught:
        await connection.tools["lookup_stock"].invoke({"item": 5})
    assert caught.value.problems == [("item", "5 is not of type 'string'")]


async def test_environment_substitution_and_working_directory(
    connect: Connect, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TEST_WAREHOUSE_TOKEN", "secret-123")
    monkeypatch.setenv("PYTHONPATH", os.getcwd())
    connection = await connect(
        stdio(
            env={"WAREHOUSE_TOKEN": "${TEST_WAREHOUSE_TOKEN}", "PYTHONPATH": "${env:PYTHONPATH}"},
            cwd=str(tmp_path),
        )
    )
    assert await connection.tools["whoami"].invoke({}) == f"secret-123 @ {tmp_path}"


async def test_a_tool_list_change_is_picked_up(connect: Connect) -> None:
    connection = await connect(stdio())
    assert "late_tool" not in connection.tools
    await connection.tools["add_tool"].invoke({"name": "late_tool"})
    await until(lambda: "late_tool" in connection.tools, 10)
    assert "late_tool works" in await connection.tools["late_tool"].invoke({})


async def test_progress_reaches_the_call(connect: Connect, tmp_path: Path) -> None:
    connection = await connect(stdio())
    seen: list[tuple[float, float | None, str | None]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    go = tmp_path / "go"
    with calling(CallScope("c1", "long_count", report)):
        call = asyncio.create_task(connection.tools["long_count"].invoke({"go_file": str(go)}))
        await until(lambda: bool(seen), 10)
        assert seen == [(2.0, 5.0, "counting aisle 2")]
        go.touch()
        assert await call == "counted 5 aisles"
    await until(lambda: len(seen) == 2, 5)
    assert seen[1] == (5.0, 5.0, "all counted")


# --- a dead server ---------------------------------------------------------------------


async def test_a_server_killed_mid_call_is_unavailable_at_once_and_comes_back(
    connect: Connect, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The default ping interval (15 s): the closed stream is what gives it away."""
    caplog.set_level(logging.INFO, logger="tools.mcp")
    starts = tmp_path / "starts"
    config = stdio(ping_interval_s=15, call_timeout_s=30, env={"WAREHOUSE_STARTS": str(starts)})
    connection = await connect(config)
    pid = int(await connection.tools["server_pid"].invoke({}))
    slow = connection.tools["slow_report"]
    running = asyncio.create_task(slow.invoke({"seconds": 30}))
    await asyncio.sleep(0.3)  # let the call reach the server
    killed_at, killed_wall = time.monotonic(), time.time()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(McpUnavailable, match="The MCP server warehouse is unavailable right now"):
        await asyncio.wait_for(running, 5)
    assert time.monotonic() - killed_at < 2
    # The first call after the kill, to a tool the model may still have been offered.
    with pytest.raises(McpUnavailable, match="unavailable right now"):
        await connection.known["lookup_stock"].invoke({"item": "flour"})
    # Reconnection started at once, not at the next ping 15 s later (the new process's own
    # start-up, a Python interpreter, takes part of this on a loaded machine), and the
    # tools are back within 2 s of it starting.
    await until(lambda: "server_pid" in connection.tools, 10)
    back_wall = time.time()
    restarted = float(starts.read_text().splitlines()[-1].split()[1])
    assert restarted - killed_wall < 5
    assert back_wall - restarted < 2
    assert int(await connection.tools["server_pid"].invoke({})) != pid
    outages = [r for r in caplog.records if "is unavailable" in r.getMessage()]
    assert len(outages) == 1


async def test_a_killed_quiet_stdio_server_leaves_the_offer_at_once(connect: Connect) -> None:
    connection = await connect(stdio(ping_interval_s=15))
    pid = int(await connection.tools["server_pid"].invoke({}))
    gone: list[float] = []
    connection.on_change = lambda: gone.append(time.monotonic()) if not connection.tools else None
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    await until(lambda: bool(gone), 5)
    assert gone[0] - killed_at < 1  # no ping needed
    await until(lambda: "server_pid" in connection.tools, 10)
    assert int(await connection.tools["server_pid"].invoke({})) != pid


async def test_a_killed_http_server_returns_within_two_seconds_of_being_back(
    connect: Connect, http_mcp_server: HttpMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tools.mcp")
    connection = await connect(
        McpServerConfig(url=http_mcp_server.url, connect_timeout_s=10), reconnect_max_s=30
    )
    stock = connection.tools["lookup_stock"]
    http_mcp_server.kill()
    # The first call after the kill finds the connection dead: unavailable, and the tools go.
    with pytest.raises(McpUnavailable, match="warehouse is unavailable right now"):
        await stock.invoke({"item": "flour"})
    assert not connection.tools
    await until(lambda: connection.failures >= 5, 20)  # backoff has grown past 4 s
    http_mcp_server.start()  # same port
    back_at = time.monotonic()
    await until(lambda: "lookup_stock" in connection.tools, 10)
    assert time.monotonic() - back_at < 2
    assert "flour: 12 bags" in await connection.tools["lookup_stock"].invoke({"item": "flour"})
    outage_lines = [r for r in caplog.records if "is unavailable" in r.getMessage()]
    assert len(outage_lines) == 1  # one log line per outage, not per retry
    assert any("is back" in r.getMessage() for r in caplog.records)


async def test_a_crashing_server_logs_its_stderr_once_per_outage_and_backs_off(
    connect: Connect, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG, logger="tools.mcp")
    starts = tmp_path / "starts"
    crashing = stdio(env={"WAREHOUSE_CRASH": "1", "WAREHOUSE_STARTS": str(starts)})
    connection = await connect(crashing, "crashy", wait=False, reconnect_max_s=4)
    await until(lambda: connection.failures >= 4, 30)
    # Backoff after repeated failures: the waits between starts grow (0.5, 1, 2 s + start).
    times = [float(line.split()[1]) for line in starts.read_text().splitlines()]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    # Lower bounds only: a loaded machine may add to any gap (an interpreter's start), so
    # the gaps need not come out in increasing order.
    assert gaps[0] >= 0.5 and gaps[1] >= 1 and gaps[2] >= 2
    crash = "crashy: RuntimeError: the stock database is locked"
    lines = [r for r in caplog.records if r.name == "tools.mcp.server"]
    assert lines[0].getMessage() == "crashy: warehouse: loading the stock database"
    assert [r.levelno for r in lines if r.getMessage() == crash][:1] == [logging.INFO]
    # The traceback once at INFO, then at DEBUG on each retry.
    assert len([r for r in lines if r.getMessage() == crash and r.levelno == logging.INFO]) == 1
    assert len([r for r in lines if r.getMessage() == crash and r.levelno == logging.DEBUG]) >= 2
    assert all(
        r.getMessage().startswith("crashy: ")
        for r in caplog.records
        if r.name == "tools.mcp.server"
    )
    [outage] = [r.getMessage() for r in caplog.records if "is unavailable" in r.getMessage()]
    assert outage.startswith("MCP server crashy is unavailable (")
    assert "its last stderr line: RuntimeError: the stock database is locked" in outage


async def test_stderr_lines_are_logged_with_the_server_name(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tools.mcp.server")
    await connect(stdio("--start-delay", "0.1"), "slowpoke")
    await until(
        lambda: any(
            r.getMessage() == "slowpoke: warehouse: warming up for 0.1 s" for r in caplog.records
        ),
        5,
    )


async def test_a_server_slower_than_its_connect_timeout_is_never_killed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """It needs 20 s; start-up waits 2 s for it, and it connects when it is ready."""
    from tools.mcp.config import McpConfig
    from tools.mcp.manager import McpManager

    caplog.set_level(logging.WARNING, logger="tools.mcp")
    starts = tmp_path / "starts"
    slow = stdio("--start-delay", "20", connect_timeout_s=2, env={"WAREHOUSE_STARTS": str(starts)})
    manager = McpManager(McpConfig(servers={"slow": slow}))
    started = time.monotonic()
    try:
        await manager.start()
        assert time.monotonic() - started < 4
        assert manager.tools() == []
        assert any(
            "MCP server slow is still starting after 2 s" in r.getMessage() for r in caplog.records
        )
        connection = manager.connections["slow"]
        await asyncio.wait_for(connection.connected.wait(), 35)
        assert time.monotonic() - started >= 19
        assert "lookup_stock" in {t.name for t in manager.tools()}
        assert starts.read_text().count("\n") == 1  # started once, never restarted
        assert connection.failures == 0
    finally:
        await manager.stop()


async def test_a_hanging_server_does_not_hold_up_start(tmp_path: Path) -> None:
    from tools.mcp.config import McpConfig
    from tools.mcp.manager import McpManager

    hanging = tmp_path / "hang.py"
    hanging.write_text("import time\ntime.sleep(60)\n")
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
        assert manager.not_listed(manager.connections["stuck"]).startswith("is still starting")
    finally:
        await manager.stop()


# --- requests from the server ----------------------------------------------------------


async def test_a_call_runs_for_its_requester_who_is_asked(connect: Connect) -> None:
    from tools.call_context import for_requester
    from tools.questions import Answer, Question
    from tools.toolset import StaticToolset

    asked: list[Question] = []

    class Person:
        async def ask(self, question: Question) -> Answer:
            asked.append(question)
            return Answer("accept", {"shelf": "A3", "count": 5, "urgent": True, "size": "large"})

    connection = await connect(stdio())
    toolset = for_requester(
        StaticToolset(list(connection.tools.values())), Requester("T1", "U1", asker=Person())
    )
    restock = await toolset.get_tool("restock")
    assert await restock.invoke({"item": "flour"}) == (
        "restocking flour: {'shelf': 'A3', 'count': 5, 'urgent': True, 'size': 'large'}"
    )
    [question] = asked
    assert question.asker == "the MCP server warehouse"
    assert question.message == "How should I restock flour?"
    assert set(question.schema["properties"]) == {"shelf", "count", "urgent", "size"}
    assert question.schema["required"] == ["shelf", "count"]
    # Nobody to ask (no requester): declined.
    assert await connection.tools["restock"].invoke({"item": "sugar"}) == "restock decline"
