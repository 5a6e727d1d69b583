"""What an MCP server may do, bounded, on a real connection: a deny list matches the name
the model sees as well as the server's, and sampling has a limit per tool call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.fakes.mcp_servers import HttpMcpServer, stdio_command
from tools.call_context import CallScope, Requester, calling
from tools.mcp.config import McpServerConfig
from tools.mcp.connection import McpConnection

FAST = {"connect_timeout_s": 10, "ping_interval_s": 0.3, "call_timeout_s": 5}

Connect = Callable[..., Any]


def stdio(**settings: Any) -> McpServerConfig:
    command, args = stdio_command()
    return McpServerConfig(command=command, args=args, **{**FAST, **settings})


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    started: list[McpConnection] = []

    async def make(config: McpServerConfig, name: str, **options: Any) -> McpConnection:
        connection = McpConnection(name, config, reconnect_max_s=0.5, **options)
        connection.start()
        started.append(connection)
        await asyncio.wait_for(connection.connected.wait(), 30)
        return connection

    yield make
    for connection in started:
        await connection.stop()


async def test_a_deny_list_matches_the_name_the_model_sees_too(connect: Connect) -> None:
    extra = {"WAREHOUSE_EXTRA_TOOL": "delete.everything,delete_all,stock.level"}
    for number, deny in enumerate((["delete_*"], ["delete.*"])):
        connection = await connect(stdio(deny=deny, prefix="wh_", env=extra), f"w{number}")
        names = sorted(connection.tools)
        assert "wh_stock_level" in names and "wh_lookup_stock" in names
        assert [name for name in names if "delete" in name] == [], deny
        assert connection.tools["wh_stock_level"].remote_name == "stock.level"
        assert await connection.tools["wh_stock_level"].invoke({}) == "stock.level from the start"


async def test_sampling_requests_past_the_servers_limit_get_an_error(
    connect: Connect, http_mcp_server: HttpMcpServer
) -> None:
    from tools.call_context import for_requester
    from tools.mcp.sampling import SamplingReply, SamplingRequest
    from tools.toolset import StaticToolset

    served: list[str] = []
    refused: list[str] = []

    class Model:
        async def sample(self, request: SamplingRequest) -> SamplingReply:
            served.append(request.messages[-1]["content"])
            return SamplingReply("ok", "m")

        async def refused(self, request: SamplingRequest, outcome: str) -> None:
            refused.append(outcome)

    limited = {"sampling": True, "sampling_max_requests_per_call": 2}
    over_stdio = stdio(**limited)
    over_http = McpServerConfig(url=http_mcp_server.url, **{**FAST, **limited})
    for number, config in enumerate((over_stdio, over_http)):
        connection = await connect(config, f"s{number}", sampler=Model())
        toolset = for_requester(
            StaticToolset(list(connection.tools.values())), Requester("T1", "U1")
        )
        tool = await toolset.get_tool("sample_repeatedly")
        for call_id in ("c1", "c2"):  # each call has its own count
            with calling(CallScope(call_id, "sample_repeatedly")):
                said = await tool.invoke({"times": 4})
            assert said.startswith("2 answered (ok, ok); 2 refused: "), said
            assert "already made 2 sampling requests" in said
    assert served == ["Q1", "Q2"] * 4
    assert refused == ["over_limit"] * 4  # the first refusal of each call
