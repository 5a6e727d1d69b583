"""A real published server from PyPI, mcp-server-time (a dev dependency), over stdio: what a
new user runs first."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.waiting import until
from tools.mcp.config import McpServerConfig
from tools.mcp.connection import McpConnection, McpUnavailable

TIME_SERVER = McpServerConfig(
    command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"]
)


def server_pids(module: str) -> list[int]:
    """Processes this test process started that run ``python -m module``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if module.encode() in cmdline and int(stat[1]) == os.getpid():
            found.append(int(entry.name))
    return found


@pytest.fixture
async def time_server() -> AsyncIterator[McpConnection]:
    connection = McpConnection("time", TIME_SERVER, reconnect_max_s=30)
    connection.start()
    try:
        await asyncio.wait_for(connection.connected.wait(), 30)
        yield connection
    finally:
        await connection.stop()


async def test_its_tools_are_listed_with_their_annotations(time_server: McpConnection) -> None:
    assert sorted(time_server.tools) == ["convert_time", "get_current_time"]
    current = time_server.tools["get_current_time"]
    assert current.hints.read_only and current.idempotent
    assert current.output_schema is not None
    assert "timezone" in current.parameters["properties"]


async def test_its_structured_plus_text_result_reads_as_the_text(
    time_server: McpConnection,
) -> None:
    """It sends the same result as JSON text and as structured content: the model gets the
    text once, as the server wrote it."""
    shown = await time_server.tools["get_current_time"].invoke({"timezone": "Asia/Tokyo"})
    data = json.loads(shown)
    assert data["timezone"] == "Asia/Tokyo" and "datetime" in data
    assert "Structured content" not in shown and '\\"' not in shown


async def test_a_kill_mid_session_and_the_first_call_after_it(time_server: McpConnection) -> None:
    """The default ping interval: the kill is seen at once, the first call after it is
    unavailable, and the tools are back well before the next ping (15 s) would find it."""
    assert time_server.config.ping_interval_s == 15
    [pid] = server_pids("mcp_server_time")
    offered = dict(time_server.tools)
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(McpUnavailable, match="The MCP server time is unavailable right now"):
        await offered["get_current_time"].invoke({"timezone": "UTC"})
    await until(
        lambda: bool(server_pids("mcp_server_time")) and server_pids("mcp_server_time") != [pid], 10
    )
    restarted_at = time.monotonic()
    assert restarted_at - killed_at < 1  # reconnection started at once
    await until(lambda: "get_current_time" in time_server.tools, 10)
    # The server's own start-up is in this (1-2 s of imports on a loaded 2-CPU machine).
    assert time.monotonic() - restarted_at < 5
    shown = await time_server.tools["get_current_time"].invoke({"timezone": "UTC"})
    assert json.loads(shown)["timezone"] == "UTC"
