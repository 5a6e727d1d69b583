"""Reaching an MCP server: stdio (the bot starts the program), streamable HTTP, or the
legacy SSE transport, all through the SDK's clients.

The read stream handed to the session is watched: when the server's side ends (a stdio
program exited, a stream closed), ``closed`` is set at once, so the connection's owner
notices a dead server without waiting for a ping.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tools.mcp.config import McpServerConfig, Transport, substitute
from tools.mcp.stderr import ServerStderr

Streams = tuple[Any, Any]
PROBE_TIMEOUT_S = 0.5


class WatchedReadStream:
    """The transport's read stream, calling ``on_closed`` once when it ends."""

    def __init__(self, inner: Any, on_closed: Callable[[], None]) -> None:
        self.inner = inner
        self.on_closed = on_closed

    @property
    def last_context(self) -> Any:  # the sender's context, where the transport keeps one
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self.inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.on_closed()
            raise

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.inner.__anext__()
        except (StopAsyncIteration, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.on_closed()
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> WatchedReadStream:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self.inner.__aexit__(exc_type, exc_val, exc_tb)
        return result


@contextlib.asynccontextmanager
async def open_transport(
    config: McpServerConfig, kind: Transport, stderr: ServerStderr
) -> AsyncIterator[Streams]:
    """The server's read and write streams over ``kind``."""
    if kind == "stdio":
        assert config.command is not None
        params = StdioServerParameters(
            command=substitute(config.command),
            args=[substitute(arg) for arg in config.args],
            env={key: substitute(value) for key, value in config.env.items()},
            cwd=substitute(config.cwd) if config.cwd is not None else None,
        )
        async with stderr.pipe() as errlog, stdio_client(params, errlog=errlog) as streams:
            errlog.close()  # the program has its copy; ours would keep the pipe open
            yield streams
        return
    assert config.url is not None
    url = substitute(config.url)
    headers = {key: substitute(value) for key, value in config.headers.items()}
    if kind == "sse":
        async with sse_client(url, headers=headers) as streams:
            yield streams
        return
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


async def reachable(url: str) -> bool:
    """Whether something accepts connections at the URL's host and port (a cheap check
    while a server is away)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with anyio.fail_after(PROBE_TIMEOUT_S):
            stream = await anyio.connect_tcp(host, port)
    except (OSError, TimeoutError, socket.gaierror):
        return False
    await stream.aclose()
    return True
