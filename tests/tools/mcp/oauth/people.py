"""A person's side of the tests' sign-ins: a session through ``BotOAuthProvider`` that either
does its work or ends in a captured sign-in, and the browser that signs in at the test
authorization server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tools.mcp.oauth.grants import client_metadata, complete_authorization
from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.provider import BotOAuthProvider
from tools.mcp.oauth.tokens import PersonTokens, TokenSnapshot, Unavailable

REDIRECT = "http://127.0.0.1:9/oauth/callback"  # nothing listens: the test is the browser
T = TypeVar("T")


@dataclass(frozen=True)
class Sent:
    method: str
    url: str
    authorization: str | None


class Person:
    """One person's provider for one server, and what it reported."""

    def __init__(self, url: str, tokens: PersonTokens, **options: Any) -> None:
        loop = asyncio.get_running_loop()
        self.pending: asyncio.Future[PendingAuthorization] = loop.create_future()
        self.unavailable: asyncio.Future[Unavailable] = loop.create_future()
        self.sent: list[Sent] = []  # every request, the auth flow's own included
        self.url = url
        self.provider = BotOAuthProvider(
            url,
            client_metadata(REDIRECT, client_name="slack-agent tests"),
            tokens,
            on_pending=self.pending.set_result,
            on_unavailable=self.unavailable.set_result,
            **options,
        )

    async def _record(self, request: httpx2.Request) -> None:
        authorization = request.headers.get("authorization")
        self.sent.append(Sent(request.method, str(request.url), authorization))

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        http = create_mcp_http_client(auth=self.provider)
        http.event_hooks["request"].append(self._record)
        async with http, Client(streamable_http_client(self.url, http_client=http)) as client:
            yield client

    async def attempt(
        self, work: Callable[[Client], Awaitable[T]]
    ) -> T | PendingAuthorization | Unavailable:
        """``work`` on a new session; or, when the provider captures a sign-in (or finds the
        tokens unavailable) first, the session closed and what it reported."""

        async def run() -> T:
            async with self.client() as client:
                return await work(client)

        task = asyncio.create_task(run())
        waits: set[asyncio.Future[Any]] = {task, self.pending, self.unavailable}
        async with asyncio.timeout(15):
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if self.unavailable.done():
            return self.unavailable.result()
        return self.pending.result()


async def follow(pending: PendingAuthorization, user: str = "alice") -> tuple[str, str | None]:
    """The browser: open the authorization URL, sign in as ``user``, and read the code and
    ``iss`` from where the server sends the browser back."""
    async with httpx2.AsyncClient(timeout=10) as http:
        login = await http.get(pending.authorization_url)
        assert login.status_code == 302, login.text
        location = login.headers["location"]
        if not location.startswith(pending.redirect_uri):  # the login page: who signs in
            back = await http.get(f"{location}&user={user}")
            assert back.status_code == 302, back.text
            location = back.headers["location"]
    assert location.startswith(pending.redirect_uri)
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == [pending.state]
    return query["code"][0], query.get("iss", [None])[0]


async def whoami(client: Client) -> str:
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    return str(result.structured_content["result"] if result.structured_content else "")


async def sign_in(person: Person, user: str = "alice") -> TokenSnapshot:
    """A whole sign-in: captured by ``person``'s provider, its record sent through JSON (as
    to another process), the browser, the code exchanged."""
    pending = await person.attempt(whoami)
    assert isinstance(pending, PendingAuthorization)
    elsewhere = PendingAuthorization.model_validate_json(pending.model_dump_json())
    code, iss = await follow(elsewhere, user)
    return await complete_authorization(elsewhere, code, iss)
