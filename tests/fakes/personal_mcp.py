"""A real MCP server that signs each person in: the mcp SDK's ``MCPServer`` as an OAuth
protected resource (``AuthSettings``: the test authorization server of
``tests/fakes/oauth_server.py`` as issuer, tokens bound to this server's URL, ``files:read``
required), its tokens checked by asking that server (``/_test/introspect``).

Tools answer for the token's subject: ``whoami``; ``read_private(name)``, that person's own
file (alice's and bob's differ); ``write_note(text)``, not read-only, which needs the scope
``files:write``: without it the HTTP request is refused with 403 ``insufficient_scope`` (a
step-up), before the call starts. ``tools/list`` differs per subject (bob has no
``write_note``); its cache hints (``ttlMs``, ``cacheScope``, 2026-07-28) come from flags.
``PersonalMcp.listed`` counts the ``tools/list`` requests it answered, per subject. With
``list_pages`` (in-process only), ``tools/list`` is paged, one page per entry, each marked
with that entry's ``cacheScope``: page ``i`` holds the ``i``-th tool, the last page the rest. With
``anonymous_list`` (``--anonymous-list``), connecting and ``tools/list`` need no token (a
token-less caller is offered ``whoami`` and ``write_note``, or the tools named by
``anonymous_offer``, ``--anonymous-offer whoami,read_private``, which implies it);
everything else still does.

In-process (a thread): ``with PersonalMcp(auth_server_url) as server:``.
As a process: ``python -m tests.fakes.personal_mcp PORT AS_URL [--list-ttl-ms N]
[--list-scope public|private] [--legacy] [--anonymous-list] [--anonymous-offer NAMES]``
(``--legacy``: a 2025-11-25 server, no ``server/discover``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from collections import Counter
from types import TracebackType
from typing import Any, Literal

import httpx2
import mcp_types as types
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.fakes.oauth_server import ThreadedServer, bound_socket, wait_listening

READ = "files:read"
WRITE = "files:write"
FILES = {
    "alice": {"plan": "alice's plan: ship the sign-in", "notes": "alice keeps her notes here"},
    "bob": {"plan": "bob's plan: review the sign-in"},
}
LISTED = {
    "alice": {"whoami", "read_private", "write_note"},
    "bob": {"whoami", "read_private"},
    "nobody": {"whoami", "write_note"},  # without a token (anonymous_list)
}


def _subject() -> str:
    token = get_access_token()
    return (token.subject if token is not None else None) or "nobody"


class IntrospectingVerifier:
    """Checks a bearer token by asking the authorization server about it."""

    def __init__(self, auth_server_url: str) -> None:
        self.url = f"{auth_server_url}/_test/introspect"

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(timeout=10) as http:
            response = await http.post(self.url, data={"token": token})
        found = response.json()
        if not found.get("active"):
            return None
        return AccessToken(
            token=token,
            client_id=found["client_id"],
            scopes=found["scope"].split(),
            expires_at=found.get("exp"),
            resource=found.get("aud"),
            subject=found.get("sub"),
        )


CacheScope = Literal["public", "private"]


class Files(MCPServer):
    listed: Counter[str]  # tools/list requests answered, per subject
    offers: dict[str, set[str]]  # what each subject is offered (LISTED, or as told)
    pages: tuple[CacheScope, ...] = ()  # tools/list's pages, by their cacheScope (none: one page)

    async def _handle_list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = await self.list_tools()
        if not self.pages:
            return types.ListToolsResult(tools=tools)
        at = int(params.cursor) if params is not None and params.cursor else 0
        last = at == len(self.pages) - 1
        return types.ListToolsResult(
            tools=tools[at:] if last else tools[at : at + 1],
            next_cursor=None if last else str(at + 1),
            cache_scope=self.pages[at],
        )

    async def list_tools(self) -> list[types.Tool]:
        """Each person is offered their own tools."""
        self.listed[_subject()] += 1
        offered = self.offers.get(_subject(), {"whoami"})
        return [tool for tool in await super().list_tools() if tool.name in offered]


def build_server(
    auth_server_url: str,
    resource_url: str,
    cache: CacheHint | None,
    anonymous_offer: frozenset[str] | None = None,
) -> Files:
    server = Files(
        "files",
        auth=AuthSettings(
            issuer_url=auth_server_url,  # as a string: no trailing slash is added
            resource_server_url=resource_url,
            validate_token_resource=True,
            required_scopes=[READ],
        ),
        token_verifier=IntrospectingVerifier(auth_server_url),
        cache_hints={"tools/list": cache} if cache is not None else None,
    )
    server.listed = Counter()
    server.offers = {subject: set(names) for subject, names in LISTED.items()}
    if anonymous_offer is not None:
        server.offers["nobody"] = set(anonymous_offer)
    notes: dict[str, list[str]] = {}

    @server.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
    def whoami() -> str:
        """Who the server takes you for."""
        return _subject()

    @server.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
    def read_private(name: str) -> str:
        """One of your own files."""
        files = FILES.get(_subject(), {})
        if name not in files:
            raise ValueError(f"you have no file named {name}")
        return files[name]

    @server.tool(annotations=types.ToolAnnotations(readOnlyHint=False))
    def write_note(text: str) -> str:
        """Adds a note to your files (needs the files:write scope)."""
        notes.setdefault(_subject(), []).append(text)
        return f"noted for {_subject()}: {text}"

    return server


ANONYMOUS = {"initialize", "notifications/initialized", "server/discover", "tools/list"}


class StepUp:
    """Refuses a ``tools/call`` of ``write_note`` at the HTTP level (403
    ``insufficient_scope``, naming ``files:write``) when the token lacks that scope; with
    ``anonymous_list``, lets a token-less POST of only the ``ANONYMOUS`` methods past the
    token check (``app`` is the SDK's ``RequireAuthMiddleware``)."""

    def __init__(
        self, app: ASGIApp, resource_metadata_url: str, *, anonymous_list: bool = False
    ) -> None:
        self.app = app
        self.resource_metadata_url = resource_metadata_url
        self.anonymous_list = anonymous_list

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        anonymous = not isinstance(user, AuthenticatedUser)
        if self.anonymous_list and anonymous and _methods(body) <= ANONYMOUS:
            await _replayed(getattr(self.app, "app", self.app), scope, receive, send, body)
            return
        if isinstance(user, AuthenticatedUser) and WRITE not in user.scopes and _calls_write(body):
            challenge = (
                f'Bearer error="insufficient_scope", scope="{WRITE}", '
                f'resource_metadata="{self.resource_metadata_url}", '
                'error_description="writing needs files:write"'
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [
                        (b"www-authenticate", challenge.encode()),
                        (b"content-type", b"application/json"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b'{"error": "insufficient_scope"}'})
            return
        await _replayed(self.app, scope, receive, send, body)


async def _replayed(app: ASGIApp, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
    """``app`` handles the request whose body was already read."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    await app(scope, replay, send)


def _methods(body: bytes) -> set[str]:
    """The JSON-RPC methods a POST body carries (a method-less message counts as "")."""
    try:
        message = json.loads(body)
    except ValueError:
        return {""}
    messages = message if isinstance(message, list) else [message]
    return {str(m.get("method") or "") if isinstance(m, dict) else "" for m in messages}


def _calls_write(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    messages = message if isinstance(message, list) else [message]
    return any(
        isinstance(m, dict)
        and m.get("method") == "tools/call"
        and isinstance(m.get("params"), dict)
        and m["params"].get("name") == "write_note"
        for m in messages
    )


async def _no_discover(ctx: object, params: types.RequestParams) -> types.DiscoverResult:
    """A 2025-11-25 server does not know ``server/discover``."""
    raise MCPError(types.METHOD_NOT_FOUND, "Method not found: server/discover")


def build_app(
    auth_server_url: str,
    base_url: str,
    *,
    list_ttl_ms: int | None = None,
    list_scope: Literal["public", "private"] = "private",
    legacy: bool = False,
    anonymous_list: bool = False,
    list_pages: tuple[CacheScope, ...] = (),
    anonymous_offer: frozenset[str] | None = None,
) -> Starlette:
    """``anonymous_offer``: what a token-less caller is offered (implies ``anonymous_list``)."""
    resource_url = f"{base_url}/mcp"
    cache = CacheHint(ttl_ms=list_ttl_ms, scope=list_scope) if list_ttl_ms is not None else None
    server = build_server(auth_server_url, resource_url, cache, anonymous_offer)
    server.pages = list_pages
    anonymous_list = anonymous_list or anonymous_offer is not None
    if legacy:
        server._lowlevel_server.add_request_handler(
            "server/discover", types.RequestParams, _no_discover
        )
    app = server.streamable_http_app(host="127.0.0.1")
    app.state.files = server
    metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource_url)))
    for route in app.routes:
        if isinstance(route, Route) and route.path == "/mcp":
            route.app = StepUp(route.app, metadata_url, anonymous_list=anonymous_list)
    return app


class PersonalMcp:
    """The server in a thread of this process; ``url`` is its MCP endpoint."""

    def __init__(
        self,
        auth_server_url: str,
        *,
        list_ttl_ms: int | None = None,
        list_scope: Literal["public", "private"] = "private",
        legacy: bool = False,
        anonymous_list: bool = False,
        list_pages: tuple[CacheScope, ...] = (),
    ) -> None:
        sock = bound_socket()
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.url = f"{base}/mcp"
        app = build_app(
            auth_server_url,
            base,
            list_ttl_ms=list_ttl_ms,
            list_scope=list_scope,
            legacy=legacy,
            anonymous_list=anonymous_list,
            list_pages=list_pages,
        )
        self._server = ThreadedServer(app, sock)
        self.listed: Counter[str] = app.state.files.listed  # tools/list answered, per subject

    def __enter__(self) -> PersonalMcp:
        self._server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.stop()


class PersonalMcpProcess:
    """``python -m tests.fakes.personal_mcp PORT AS_URL ...`` as a process."""

    def __init__(self, auth_server_url: str, *options: str) -> None:
        sock = bound_socket()
        self.port = sock.getsockname()[1]
        sock.close()
        self.auth_server_url = auth_server_url
        self.options = options
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fakes.personal_mcp",
                str(self.port),
                self.auth_server_url,
                *self.options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_listening(self.port, self.process)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("auth_server_url")
    parser.add_argument("--list-ttl-ms", type=int, default=None)
    parser.add_argument("--list-scope", choices=["public", "private"], default="private")
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--anonymous-list", action="store_true")
    parser.add_argument(
        "--anonymous-offer", default=None, help="NAME,NAME: what a token-less caller is offered"
    )
    args = parser.parse_args(argv[1:])
    app = build_app(
        args.auth_server_url,
        f"http://127.0.0.1:{args.port}",
        list_ttl_ms=args.list_ttl_ms,
        list_scope=args.list_scope,
        legacy=args.legacy,
        anonymous_list=args.anonymous_list,
        anonymous_offer=frozenset(args.anonymous_offer.split(","))
        if args.anonymous_offer is not None
        else None,
    )
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    asyncio.run(uvicorn.Server(config).serve([bound_socket(args.port)]))


if __name__ == "__main__":
    main(sys.argv)
