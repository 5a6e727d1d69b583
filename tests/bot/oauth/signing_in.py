"""A replica's sign-in routes on the real Redis, the test authorization server and MCP server
in-process, and a browser that follows a start link: what the callback and the
``/agent connect`` tests share.

``site`` serves ``oauth_routes`` on a free loopback port, with ``oauth.redirect_base_url``
pointing at it and the MCP server ``files`` (``auth: oauth``) in the config; ``capture`` has
the SDK build a person's authorization request for it (``BotOAuthProvider``, as
tests/tools/mcp/oauth do), with the site's callback as redirect URI.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from aiohttp import web
from pydantic import AnyUrl

from bot.oauth.flows import COOKIE
from bot.oauth.side import OAuthSide
from bot.oauth.web import oauth_routes
from bot.process.state import State
from tests.fakes.oauth_server import AuthServer, bound_socket
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.people import Person, whoami
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import PendingAuthorization

KEY = bytes(range(32))
KEY_TEXT = base64.b64encode(KEY).decode()
ALICE = Account("T1", "U1")


@dataclass
class Site:
    """A replica's routes: its state (``state.oauth``) and its base URL."""

    state: State
    base: str
    files_url: str

    @property
    def side(self) -> OAuthSide:
        assert self.state.oauth is not None
        return self.state.oauth

    @property
    def callback(self) -> str:
        return self.base + "/oauth/callback"


@pytest.fixture
def auth_server() -> Iterator[AuthServer]:
    with AuthServer() as server:
        yield server


@pytest.fixture
def files(auth_server: AuthServer) -> Iterator[PersonalMcp]:
    with PersonalMcp(auth_server.url) as server:
        yield server


def signing_in_config(base: str, files_url: str, **oauth: Any) -> dict[str, Any]:
    """The config sections of a bot whose server ``files`` signs each person in."""
    return {
        "oauth": {"redirect_base_url": base, **oauth},
        "mcp": {"servers": {"files": {"url": files_url, "auth": "oauth"}}},
    }


@pytest.fixture
async def site(
    make_state: Callable[..., State],
    files: PersonalMcp,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Site]:
    monkeypatch.setenv("SLACK_AGENT_SECRET_KEY", KEY_TEXT)
    monkeypatch.delenv("SLACK_AGENT_SECRET_KEY_PREVIOUS", raising=False)
    sock = bound_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    state = make_state(**signing_in_config(base, files.url))
    assert state.oauth is not None
    app = web.Application()
    app.add_routes(oauth_routes(state.oauth))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.SockSite(runner, sock).start()
        yield Site(state, base, files.url)
    finally:
        await runner.cleanup()
        sock.close()


async def capture(files_url: str, redirect_uri: str) -> PendingAuthorization:
    """A person's authorization request, built by the SDK (discovery, registration, PKCE)
    and captured, for ``redirect_uri``."""
    person = Person(files_url, MemoryTokens())
    person.provider.context.client_metadata.redirect_uris = [AnyUrl(redirect_uri)]
    pending = await person.attempt(whoami)
    assert isinstance(pending, PendingAuthorization)
    return pending


def state_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["state"][0]


# What a browser adds to the start page's own form POST: it is same-origin, and the page is
# served no-referrer, so its Origin is "null".
AS_SENT = {"Sec-Fetch-Site": "same-origin", "Origin": "null"}
HIDDEN = re.compile(r'<input type=hidden name=(\w+) value="([^"]*)">')


def start_form(page: str) -> dict[str, str]:
    """The start page's form fields, as a browser posts them when Continue is pressed."""
    fields = {name: html.unescape(value) for name, value in HIDDEN.findall(page)}
    assert "state" in fields and "nonce" in fields, page
    return fields


class Browser:
    """One browser: its own cookies, no redirect followed unless asked. ``secure``: origins
    whose Secure cookies it keeps over http (as browsers do for 127.0.0.1)."""

    def __init__(self, secure: str | None = None) -> None:
        jar = aiohttp.CookieJar(unsafe=True, treat_as_secure_origin=secure)
        self.session = aiohttp.ClientSession(cookie_jar=jar)

    async def close(self) -> None:
        await self.session.close()

    async def get(self, url: str) -> tuple[int, str, dict[str, str]]:
        async with self.session.get(url, allow_redirects=False) as response:
            return response.status, await response.text(), dict(response.headers)

    async def post_start(
        self, start_url: str, headers: dict[str, str] | None = None
    ) -> tuple[int, str, dict[str, str]]:
        """Open the start page and press Continue (its form posts the state and the nonce;
        a page that is not shown: the state alone). ``headers``: what the browser adds to
        the POST (a real one: ``Sec-Fetch-Site: same-origin``, ``Origin: null``)."""
        status, page, _ = await self.get(start_url)
        form = start_form(page) if status == 200 else {"state": state_of(start_url)}
        return await self.post_form(start_url, form, headers)

    async def post_form(
        self, start_url: str, form: dict[str, str], headers: dict[str, str] | None = None
    ) -> tuple[int, str, dict[str, str]]:
        """POST ``form`` to the start link's page, with this browser's cookies."""
        parts = urlsplit(start_url)
        action = f"{parts.scheme}://{parts.netloc}{parts.path}"
        async with self.session.post(
            action, data=form, headers=headers or {}, allow_redirects=False
        ) as response:
            return response.status, await response.text(), dict(response.headers)

    async def authorize(self, location: str, user: str = "alice", deny: bool = False) -> str:
        """At the authorization server: sign in as ``user`` (or refuse); where it sends the
        browser back (the callback with code, state and iss, or error)."""
        status, body, headers = await self.get(location)
        assert status == 302, body
        choice = "&deny=1" if deny else f"&user={user}"
        status, body, headers = await self.get(headers["Location"] + choice)
        assert status == 302, body
        return headers["Location"]

    async def to_callback(self, start_url: str, user: str = "alice", deny: bool = False) -> str:
        """Open the link, press Continue, sign in: the callback URL, not yet followed."""
        status, body, _ = await self.get(start_url)
        assert status == 200, body
        status, body, headers = await self.post_form(start_url, start_form(body), AS_SENT)
        assert status == 303, body
        return await self.authorize(headers["Location"], user, deny)

    def has_cookie(self, name: str = COOKIE) -> bool:
        return any(cookie.key == name for cookie in self.session.cookie_jar)


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    opened = Browser()
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def other_browser() -> AsyncIterator[Browser]:
    opened = Browser()
    try:
        yield opened
    finally:
        await opened.close()
