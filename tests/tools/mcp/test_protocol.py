"""Which MCP protocol the bot speaks with a server, as the SDK negotiates it: a 2026-07-28
server is reached by ``server/discover``, a handshake-era one by ``initialize``; a question
a 2026 server asks inside a call (a result that says ``input_required``) goes to the same
person as a handshake-era one; and a refusal or a 401 is never taken for an SSE server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.fakes.mcp_servers import HttpMcpServer, stdio_command
from tests.waiting import until
from tools.call_context import CallScope, Requester, calling, for_requester
from tools.mcp.config import McpServerConfig
from tools.mcp.connection import McpConnection
from tools.mcp.sampling import SamplingReply, SamplingRequest
from tools.questions import Answer, Question
from tools.toolset import StaticToolset

FAST = {"connect_timeout_s": 10, "ping_interval_s": 0.3, "call_timeout_s": 5}
ANSWER = {"shelf": "A3", "count": 5, "urgent": True, "size": "large"}


@contextlib.asynccontextmanager
async def connected(
    config: McpServerConfig, wait: bool = True, **options: Any
) -> AsyncIterator[McpConnection]:
    connection = McpConnection("warehouse", config, reconnect_max_s=0.5, **options)
    connection.start()
    try:
        if wait:
            await asyncio.wait_for(connection.connected.wait(), 30)
        yield connection
    finally:
        await connection.stop()


@pytest.fixture
def modern_http_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer("http", "--modern")
    server.start()
    try:
        yield server
    finally:
        server.kill()


def stdio(*options: str, **settings: Any) -> McpServerConfig:
    command, args = stdio_command(*options)
    return McpServerConfig(command=command, args=args, **{**FAST, **settings})


async def test_each_era_is_negotiated_as_the_sdk_does_it(
    modern_http_server: HttpMcpServer, http_mcp_server: HttpMcpServer
) -> None:
    cases = [
        (McpServerConfig(url=modern_http_server.url, **FAST), "2026-07-28"),
        (McpServerConfig(url=http_mcp_server.url, **FAST), "2025-11-25"),
        (stdio("--modern"), "2026-07-28"),
        (stdio(), "2025-11-25"),
    ]
    for config, version in cases:
        async with connected(config) as connection:
            assert connection.protocol == version
            lookup = connection.tools["lookup_stock"]
            assert await lookup.invoke({"item": "salt"}) == "salt: 12 bags"
            await asyncio.sleep(0.7)  # two quiet-connection checks: ping, or server/discover
            assert connection.connected.is_set() and connection.last_error is None


async def test_a_2026_server_that_changes_its_tools_is_listed_again(
    modern_http_server: HttpMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tools.mcp")
    for config in [McpServerConfig(url=modern_http_server.url, **FAST), stdio("--modern")]:
        caplog.clear()
        async with connected(config) as connection:
            assert connection.protocol == "2026-07-28" and "late_tool" not in connection.tools
            await connection.tools["add_tool"].invoke({"name": "late_tool"})
            await until(lambda: "late_tool" in connection.tools, 10)
            assert await connection.tools["late_tool"].invoke({}) == "late_tool works"
            # Said on the subscription, not found by reconnecting.
            said = [r.getMessage() for r in caplog.records]
            assert any("warehouse changed its tools" in line for line in said)
            assert not any("unavailable" in line for line in said)


async def test_a_question_inside_a_call_goes_to_the_person_in_either_era(
    modern_http_server: HttpMcpServer,
) -> None:
    asked: list[Question] = []

    class Person:
        async def ask(self, question: Question) -> Answer:
            asked.append(question)
            return Answer("accept", dict(ANSWER))

    for config, version in [
        (McpServerConfig(url=modern_http_server.url, **FAST), "2026-07-28"),
        (stdio(), "2025-11-25"),
    ]:
        asked.clear()
        async with connected(config) as connection:
            assert connection.protocol == version
            toolset = for_requester(
                StaticToolset(list(connection.tools.values())),
                Requester("T1", "U1", asker=Person()),
            )
            restock = await toolset.get_tool("restock_either_era")
            with calling(CallScope("c1", "restock_either_era")):
                said = await restock.invoke({"item": "flour"})
            assert said == f"restocking flour: {ANSWER}"
            [question] = asked
            assert question.asker == "the MCP server warehouse"
            assert question.message == "How should I restock flour?"
            assert question.schema["required"] == ["shelf", "count"]
            # Nobody to ask (no requester): declined, in both eras.
            nobody = await connection.tools["restock_either_era"].invoke({"item": "sugar"})
            assert nobody == "restock decline"


class RefusingServer:
    """An HTTP server that answers every request with one response (a JSON-RPC error answers
    the request's id), and keeps the requests' methods (an SSE client would send a GET)."""

    def __init__(self, status: str, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body
        self.methods: list[str] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/mcp"

    async def __aenter__(self) -> RefusingServer:
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        self.methods.append(head.split(" ", 1)[0])
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        request = json.loads(await reader.readexactly(length)) if length else {}
        body = self.body
        if body.startswith(b"{"):
            body = json.dumps({**json.loads(body), "id": request.get("id")}).encode()
        headers = {**self.headers, "Content-Length": str(len(body)), "Connection": "close"}
        lines = [f"HTTP/1.1 {self.status}", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()
        writer.close()


def rpc_error(message: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    ).encode()


@pytest.mark.parametrize(
    ("status", "headers", "body", "said"),
    [
        (
            "401 Unauthorized",
            {"WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1/prm"'},
            b"",
            "(the server answered HTTP 401 Unauthorized; WWW-Authenticate: Bearer "
            'resource_metadata="http://127.0.0.1/prm")',
        ),
        ("403 Forbidden", {}, b"", "(the server answered HTTP 403 Forbidden)"),
        (
            "400 Bad Request",
            {"Content-Type": "application/json"},
            rpc_error("Missing MCP-Protocol-Version header"),
            "MCPError: Missing MCP-Protocol-Version header",
        ),
        (
            "200 OK",
            {"Content-Type": "application/json"},
            rpc_error("this server is closed for the night"),
            "MCPError: this server is closed for the night",
        ),
    ],
)
async def test_a_refusal_or_a_401_is_never_taken_for_an_sse_server(
    status: str, headers: dict[str, str], body: bytes, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tools.mcp")
    async with RefusingServer(status, headers, body) as server:
        config = McpServerConfig(url=server.url, **FAST)  # no transport: SSE is a fallback
        async with connected(config, wait=False) as connection:
            await until(lambda: connection.last_error is not None, 10)
            error: Any = connection.last_error
            assert said in error
            assert "SSE" not in error and "sse" not in error
            assert connection.kind == "streamable_http"
        assert "GET" not in server.methods and "POST" in server.methods
    assert not any("trying SSE" in r.getMessage() for r in caplog.records)


async def test_a_url_that_serves_no_mcp_still_falls_back_to_sse(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """404 without a JSON-RPC error: the spec's sign of a handshake-era SSE server."""
    caplog.set_level(logging.INFO, logger="tools.mcp")
    async with RefusingServer("404 Not Found", {"Content-Type": "text/plain"}, b"no") as server:
        config = McpServerConfig(url=server.url, **FAST)
        async with connected(config, wait=False) as connection:
            await until(lambda: connection.last_error is not None, 10)
            assert connection.last_error is not None
            assert connection.last_error.startswith("neither streamable HTTP (")
        assert "GET" in server.methods
    assert any("trying SSE" in r.getMessage() for r in caplog.records)


async def test_sampling_inside_a_call_is_served_for_the_person_in_either_era(
    modern_http_server: HttpMcpServer,
) -> None:
    requests: list[SamplingRequest] = []

    class Model:
        async def sample(self, request: SamplingRequest) -> SamplingReply:
            requests.append(request)
            return SamplingReply("White", "fake-model")

        async def refused(self, request: SamplingRequest, outcome: str) -> None:
            raise AssertionError(outcome)

    for config, version in [
        (McpServerConfig(url=modern_http_server.url, sampling=True, **FAST), "2026-07-28"),
        (stdio(sampling=True), "2025-11-25"),
    ]:
        requests.clear()
        async with connected(config, sampler=Model()) as connection:
            assert connection.protocol == version
            toolset = for_requester(
                StaticToolset(list(connection.tools.values())), Requester("T1", "U1")
            )
            ask = await toolset.get_tool("sample_either_era")
            with calling(CallScope("c1", "sample_either_era")):
                said = await ask.invoke({"question": "What colour is snow?"})
            assert said == "the model (fake-model) said: White"
            [request] = requests
            assert (request.requester.user, request.tool) == ("U1", "sample_either_era")
            assert request.max_tokens == 1000  # the server asked for 5000: the cap
            assert request.messages[-1] == {"role": "user", "content": "What colour is snow?"}
