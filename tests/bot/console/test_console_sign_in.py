"""``slack-agent chat`` signs its person in at the terminal: from a pipe it refuses and says
how; on a terminal it prints the link, serves the sign-in's pages on its loopback port while
it waits, and the call goes ahead once the person connected (the test's stand-in for the
person follows the printed link with an HTTP client, against the test authorization server
and its MCP server); Ctrl-C gives up the sign-in, not the turn. Real Redis, the real
``OAuthSide`` and the personal server of the manager."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import re
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
import yaml

from bot.config.schema import AppConfig
from bot.console.chat import CONSOLE_TEAM
from bot.console.interrupt import CtrlC
from bot.console.sign_in import CONNECTED_NOW, ConsoleSignIn, ConsoleTerminal
from bot.oauth.side import OAuthSide
from bot.oauth.web import oauth_routes
from bot.oauth.wiring import SignInStores, personal_wiring
from bot.process.services import load
from bot.process.state import State
from tests.bot.oauth.signing_in import start_form
from tests.fakes.oauth_server import AuthServer, bound_socket
from tests.fakes.personal_mcp import PersonalMcp
from tools.call_context import CallScope, calling
from tools.mcp.manager import McpManager
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.errors import NotConnected, SignInFailed, SignInUnavailable
from tools.mcp.oauth.gate import PersonalToolset, SignInToolset
from tools.registry import ToolRegistry
from tools.toolset import Toolset

KEY = base64.b64encode(bytes(range(32))).decode()
ACCOUNT = Account(CONSOLE_TEAM, "alice")
LINK = re.compile(r"Sign in to files: (\S+)")


@pytest.fixture
def auth_server() -> Iterator[AuthServer]:
    with AuthServer() as server:
        yield server


@pytest.fixture
def files(auth_server: AuthServer) -> Iterator[PersonalMcp]:
    with PersonalMcp(auth_server.url) as server:
        yield server


class Terminal(io.StringIO):
    """The console's stderr, as the person reads it: the printed start link, when it comes."""

    def __init__(self) -> None:
        super().__init__()
        self.link: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def write(self, text: str) -> int:
        found = LINK.search(text)
        if found and not self.link.done():
            self.link.set_result(found.group(1))
        return super().write(text)


class Console:
    """The console's tools for alice: the gate around her personal tools of ``files``."""

    def __init__(self, side: OAuthSide, manager: McpManager, port: int) -> None:
        self.side = side
        self.manager = manager
        self.port = port

    def toolset(self, terminal: ConsoleTerminal, timeout_s: float = 30) -> Toolset:
        personal = self.manager.personal
        connector = ConsoleSignIn(
            self.side,
            personal,
            ACCOUNT,
            oauth_routes(self.side),
            terminal,
            timeout_s=timeout_s,
            port=self.port,
        )
        own = PersonalToolset(ToolRegistry(), personal, ACCOUNT)
        return SignInToolset(own, connector, personal)


@pytest.fixture
async def console(
    make_state: Any, files: PersonalMcp, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Console]:
    monkeypatch.setenv("SLACK_AGENT_SECRET_KEY", KEY)
    monkeypatch.delenv("SLACK_AGENT_SECRET_KEY_PREVIOUS", raising=False)
    with bound_socket() as sock:  # a free port for the console's loopback callback
        port = sock.getsockname()[1]
    sections: dict[str, Any] = {
        "oauth": {"redirect_base_url": "https://bot.example.com", "console_port": port},
        "mcp": {"servers": {"files": {"url": files.url, "auth": "oauth", "prefix": "files_"}}},
    }
    state: State = make_state(**sections)
    side = state.oauth
    assert side is not None
    # The manager as `slack-agent chat` builds it (bot/process/services.load).
    config = AppConfig.model_validate(sections)
    stores = SignInStores()
    stores.use(side)
    manager = McpManager(config.mcp, personal=personal_wiring(config, stores, console=True))
    try:
        yield Console(side, manager, port)
    finally:
        await manager.stop()


async def call(toolset: Toolset, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call ``name`` as the loop does: inside its call's scope."""
    tool = await toolset.get_tool(name)
    with calling(CallScope("call-1", name)):
        return await tool.invoke(arguments or {})


async def follow(link: str, user: str = "alice", status: int = 200) -> None:
    """The person opens the printed link: the start page, Continue (its form), the
    authorization server's sign-in, back to the console's callback (answered ``status``)."""
    assert link.startswith("http://127.0.0.1:")
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        async with browser.get(link, allow_redirects=False) as page:
            assert page.status == 200, await page.text()
            form = start_form(await page.text())
        parts = urlsplit(link)
        action = f"{parts.scheme}://{parts.netloc}{parts.path}"
        origin = {"Origin": f"{parts.scheme}://{parts.netloc}", "Sec-Fetch-Site": "same-origin"}
        async with browser.post(
            action, data=form, headers=origin, allow_redirects=False
        ) as started:
            assert started.status == 303, await started.text()
            authorize = started.headers["Location"]
        async with browser.get(authorize, allow_redirects=False) as asked:
            login = asked.headers["Location"]
        async with browser.get(f"{login}&user={user}", allow_redirects=False) as signed:
            callback = signed.headers["Location"]
        assert callback.startswith(link.split("/oauth/")[0] + "/oauth/callback?")
        async with browser.get(callback, allow_redirects=False) as back:
            assert back.status == status, await back.text()


async def test_from_a_pipe_the_model_is_told_to_use_a_terminal(console: Console) -> None:
    terminal = Terminal()
    toolset = console.toolset(ConsoleTerminal(False, terminal, CtrlC()))
    with pytest.raises(NotConnected) as refused:
        await call(toolset, "files_connect")
    assert str(refused.value) == (
        "files_connect did not run: files needs a sign-in, and nobody is at a terminal to "
        "sign in; run slack-agent chat on a terminal once."
    )
    assert terminal.getvalue() == ""  # no link printed where nobody follows it


async def test_on_a_terminal_the_person_follows_the_link_and_the_call_runs(
    console: Console,
) -> None:
    terminal = Terminal()
    toolset = console.toolset(ConsoleTerminal(True, terminal, CtrlC()))
    connecting = asyncio.ensure_future(call(toolset, "files_connect"))
    link = await asyncio.wait_for(terminal.link, 20)
    await follow(link)
    result = await asyncio.wait_for(connecting, 20)
    assert "Connected to files" in str(result) and "files_whoami" in str(result)
    assert "Connected to files." in terminal.getvalue()
    # Kept under team `console` and the person: the next call (even from a pipe) just runs.
    piped = console.toolset(ConsoleTerminal(False, Terminal(), CtrlC()))
    assert await call(piped, "files_whoami") == "alice"
    [connection] = await console.side.connections.connections(ACCOUNT)
    assert connection.server == "files"


async def test_ctrl_c_gives_up_the_sign_in(console: Console) -> None:
    terminal = Terminal()
    toolset = console.toolset(ConsoleTerminal(True, terminal, CtrlC()))
    connecting = asyncio.ensure_future(call(toolset, "files_connect"))
    await asyncio.wait_for(terminal.link, 20)
    os.kill(os.getpid(), signal.SIGINT)  # caught by the sign-in's wait, not Python's default
    with pytest.raises(NotConnected) as refused:
        await asyncio.wait_for(connecting, 20)
    assert str(refused.value) == "files_connect did not run: alice chose not to connect files."


async def test_a_sign_in_that_fails_at_the_callback_tells_the_model_at_once(
    console: Console, auth_server: AuthServer
) -> None:
    """The authorization server's answer fails a check (a wrong ``iss``): the console stops
    waiting then and the model is told SignInFailed (not "did not connect within ..."); the
    next call asks again, and connects."""
    terminal = Terminal()
    toolset = console.toolset(ConsoleTerminal(True, terminal, CtrlC()), timeout_s=600)
    connecting = asyncio.ensure_future(call(toolset, "files_connect"))
    auth_server.switches.iss = "wrong"
    await follow(await asyncio.wait_for(terminal.link, 20), status=400)
    with pytest.raises(SignInFailed) as failed:
        await asyncio.wait_for(connecting, 20)
    assert str(failed.value) == (
        "files_connect did not run: the sign-in to files failed; alice can try again."
    )
    auth_server.switches.iss = "send"
    again = Terminal()
    toolset = console.toolset(ConsoleTerminal(True, again, CtrlC()))
    connecting = asyncio.ensure_future(call(toolset, "files_connect"))
    await follow(await asyncio.wait_for(again.link, 20))
    assert "Connected to files" in str(await asyncio.wait_for(connecting, 20))


async def test_more_access_asked_mid_call_comes_back_to_the_console(console: Console) -> None:
    """A server that wants more scope for a running call (403 ``insufficient_scope``): the
    console's person signs in again through its own loopback callback, then the call runs."""
    terminal = Terminal()
    toolset = console.toolset(ConsoleTerminal(True, terminal, CtrlC()))
    connecting = asyncio.ensure_future(call(toolset, "files_connect"))
    await follow(await asyncio.wait_for(terminal.link, 20))
    await asyncio.wait_for(connecting, 20)

    again = Terminal()
    toolset = console.toolset(ConsoleTerminal(True, again, CtrlC()))
    writing = asyncio.ensure_future(call(toolset, "files_write_note", {"text": "x"}))
    # follow() checks the authorization server sends the browser back to the console's own
    # callback (http://127.0.0.1:<console_port>/oauth/callback), which finishes the sign-in.
    await follow(await asyncio.wait_for(again.link, 20))
    with pytest.raises(NotConnected) as told:
        await asyncio.wait_for(writing, 20)
    assert str(told.value) == CONNECTED_NOW.format(tool="files_write_note", server="files")
    assert "Connected to files." in again.getvalue()
    # The model calls it again: it runs with the wider grant.
    assert await call(toolset, "files_write_note", {"text": "x"}) == "noted for alice: x"


def test_the_console_builds_every_sign_in_with_its_loopback_callback(tmp_path: Path) -> None:
    """`slack-agent chat`'s process (``load(console=True)``) builds every authorization
    request with the console's callback, with the client registered for it (no client
    metadata document); the Slack processes' with the public one."""
    path = tmp_path / "agent.yaml"
    server = {"url": "http://127.0.0.1:9/mcp", "auth": "oauth"}  # never connected here
    oauth = {"redirect_base_url": "https://bot.example.com", "console_port": 8123}
    path.write_text(yaml.safe_dump({"oauth": oauth, "mcp": {"servers": {"files": server}}}))

    chat = load(path, console=True)[2].mcp.personal["files"].wiring
    slack = load(path)[2].mcp.personal["files"].wiring

    assert (chat.redirect_uri, chat.client_metadata_url) == (
        "http://127.0.0.1:8123/oauth/callback",
        None,
    )
    assert (slack.redirect_uri, slack.client_metadata_url) == (
        "https://bot.example.com/oauth/callback",
        "https://bot.example.com/oauth/client.json",
    )


@pytest.mark.parametrize(
    ("switches", "told"),
    [
        # its metadata names another issuer: the sign-in fails (the person may try again)
        (
            {"wrong_metadata_issuer": True},
            "files_connect did not run: the sign-in to files failed; alice can try again.",
        ),
        # its registration endpoint fails (503): the sign-in service is unavailable
        (
            {"register_status": 503},
            "files_connect did not run: files's sign-in service is unavailable right now.",
        ),
    ],
    ids=["wrong_issuer", "registration_503"],
)
async def test_an_authorization_server_that_refuses_or_fails_is_told_apart(
    console: Console, auth_server: AuthServer, switches: dict[str, Any], told: str
) -> None:
    for name, value in switches.items():
        setattr(auth_server.switches, name, value)
    terminal = Terminal()
    toolset = console.toolset(ConsoleTerminal(True, terminal, CtrlC()))
    with pytest.raises((SignInFailed, SignInUnavailable)) as refused:
        await call(toolset, "files_connect")
    assert str(refused.value) == told
    assert terminal.getvalue() == ""  # no link: there is nothing to sign in to
