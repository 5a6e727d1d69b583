"""Reaching an MCP server: stdio (the bot starts the program), streamable HTTP, or the
legacy SSE transport, all through the SDK's clients; and the SDK ``Client`` over one
(:func:`new_client`), built the same way for the shared connection (``supervisor.py``) and a
person's own session (``oauth/pool.py``).

The read stream handed to the session is watched: when the server's side ends (a stdio
program exited, a stream closed), ``closed`` is set at once, so the connection's owner
notices a dead server without waiting for a ping.

Over HTTP, a connection may carry an ``httpx2.Auth`` (e.g. the SDK's
``mcp.client.auth.OAuthClientProvider``) that signs its requests, and what the server
answered to the client's POSTs is kept (:class:`HttpAnswers`): the SDK turns an HTTP refusal
into a bare JSON-RPC error, and only the status tells "no MCP endpoint here" (404, 405: maybe
an SSE server) from "refused" (401, 403, ...), which must name what the server said.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client import Client
from mcp.client.caching import CacheConfig
from mcp.client.session import LoggingFnT, MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tools.mcp.config import McpServerConfig, Transport, substitute
from tools.mcp.identity import client_info
from tools.mcp.server_requests import ServerRequests
from tools.mcp.stderr import ServerStderr

Streams = tuple[Any, Any]
PROBE_TIMEOUT_S = 0.5
NOT_AN_ENDPOINT = (404, 405)  # what a URL that serves no streamable HTTP answers a POST


class HttpAnswers:
    """What the server answered to the client's POSTs during one connection attempt."""

    def __init__(self) -> None:
        self.last_status: int | None = None
        self.refusal: str | None = None  # the last refusal, in words
        self.rpc_body = False  # the last refusal carried a JSON body (a JSON-RPC error)

    async def record(self, response: httpx2.Response) -> None:
        if response.request.method != "POST":
            return
        self.last_status = response.status_code
        if response.status_code < 400:
            return
        self.rpc_body = response.headers.get("content-type", "").startswith("application/json")
        words = f"HTTP {response.status_code} {response.reason_phrase}".strip()
        challenge = response.headers.get("www-authenticate")
        if challenge:
            words += f"; WWW-Authenticate: {' '.join(challenge.split())[:200]}"
        self.refusal = words

    def not_an_endpoint(self) -> bool:
        """The server answered the POSTs as a URL with no streamable HTTP MCP endpoint does
        (404 or 405, no JSON-RPC error): it may be an SSE server."""
        return self.last_status in NOT_AN_ENDPOINT and not self.rpc_body

    def refused(self) -> bool:
        return self.last_status is not None and self.last_status >= 400


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
    config: McpServerConfig,
    kind: Transport,
    stderr: ServerStderr,
    *,
    auth: httpx2.Auth | None = None,
    answers: HttpAnswers | None = None,
) -> AsyncIterator[Streams]:
    """The server's read and write streams over ``kind``; over HTTP, requests are signed by
    ``auth`` and the answers to POSTs are recorded in ``answers``."""
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
        async with sse_client(url, headers=headers, auth=auth) as streams:
            yield streams
        return
    http = create_mcp_http_client(headers=headers, auth=auth)
    if answers is not None:
        http.event_hooks["response"].append(answers.record)
    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams


def new_client(
    transport: Any,
    kind: Transport,
    requests: ServerRequests,
    *,
    cache: CacheConfig | None = None,
    message_handler: MessageHandlerFnT | None = None,
    logging_callback: LoggingFnT | None = None,
) -> Client:
    """The SDK's client over ``transport`` (entered by the caller): it negotiates the
    protocol (``server/discover`` for a 2026-07-28 server, else the ``initialize`` handshake;
    SSE always uses the handshake), introduces itself with the bot's name and version, and
    offers what ``requests`` serves (elicitation, sampling, progress). ``cache``: the SDK's
    response cache (None: nothing is reused); ``logging_callback``: the server's log
    messages, opted in at ``info``."""
    return Client(
        transport,
        mode="legacy" if kind == "sse" else "auto",
        message_handler=message_handler,
        logging_callback=logging_callback,
        log_level="info" if logging_callback is not None else None,
        client_info=client_info(),
        sampling_callback=requests.sampling_callback(),
        elicitation_callback=requests.elicit,
        cache=cache,
    )


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
