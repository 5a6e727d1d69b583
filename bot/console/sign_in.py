"""``slack-agent chat``'s sign-in gate (the ``Connector`` of tools/mcp/oauth/gate.py): the
console's person connects to an MCP server that signs each person in from the terminal.

Their token fresh: the call goes ahead. Not connected, on a terminal: the server's
authorization request is built with the console's own callback
(``http://127.0.0.1:<oauth.console_port>/oauth/callback``), the flow stored as any sign-in's
(``SignIns.begin``, its start link on that loopback address), a loopback site serves the
sign-in's pages (the same routes a replica serves) while it waits, and the console prints
"Sign in to <server>: <link>". The call's clock is stopped while it waits for the sign-in to
end (``SignIns.wait_finished``), ``approval.timeout_s`` at most: connected, the call goes
ahead; declined at the authorization server, failed or unavailable there, the model is told
at once (``NotConnected``, ``SignInFailed``, ``SignInUnavailable``). Ctrl-C gives up the
sign-in (not the turn): the model is told the person chose not to connect. From a pipe nobody
can follow a link: the model is told to run ``slack-agent chat`` on a terminal once. Tokens
are kept as a Slack person's are, under team ``console`` and the ``--user``, so scripted runs
work afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn, Protocol, TextIO

from aiohttp import web

from bot.console.interrupt import CtrlC
from bot.oauth.config import CALLBACK_PATH
from bot.oauth.config import CONSOLE_HOST as LOOPBACK
from bot.turn.approval import duration
from bot.turn.sign_in import Flows, PersonalBegin
from tools.call_context import current_call
from tools.definition import Tool
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.errors import NotConnected, SignInFailed, SignInUnavailable
from tools.mcp.oauth.grants import GrantRefused, GrantUnavailable
from tools.mcp.oauth.pending import PendingAuthorization, SignInRequired
from tools.mcp.oauth.tokens import Held, PersonTokens, Unavailable

log = logging.getLogger(__name__)

NO_TERMINAL = (
    "{tool} did not run: {server} needs a sign-in, and nobody is at a terminal to sign in; "
    "run slack-agent chat on a terminal once."
)
PORT_TAKEN = (
    "{tool} did not run: {server} needs a sign-in, and the console's sign-in address "
    "(127.0.0.1:{port}, oauth.console_port) is taken."
)
CONNECTED_NOW = (
    "{tool} did not run: {server} asked for a new sign-in, which is done now; call {tool} again."
)


class ConsoleFlows(Flows, Protocol):
    """The flows, and how a sign-in ended (``SignIns``, bot/oauth/flows.py)."""

    async def wait_finished(self, state: str, timeout_s: float) -> str | None: ...


class ConsoleSide(Protocol):
    """What the console's gate needs of the OAuth side (``OAuthSide``, bot/oauth/side.py)."""

    @property
    def sign_ins(self) -> ConsoleFlows: ...

    def tokens_for(self, account: Account, server: str) -> PersonTokens: ...


@dataclass(frozen=True)
class ConsoleTerminal:
    """Where the console's person is: on a terminal (``interactive``) or not, where it
    writes to them, and who Ctrl-C goes to."""

    interactive: bool
    err: TextIO
    ctrl_c: CtrlC


class ConsoleSignIn:
    def __init__(
        self,
        side: ConsoleSide,
        personal: Mapping[str, PersonalBegin],
        account: Account,
        routes: Sequence[web.RouteDef],
        terminal: ConsoleTerminal,
        *,
        timeout_s: float,
        port: int,
    ) -> None:
        """``routes``: the sign-in's pages (``bot/oauth/web.oauth_routes``), served on
        ``127.0.0.1:<port>`` while a sign-in waits."""
        self.side = side
        self.personal = personal
        self.account = account
        self.routes = list(routes)
        self.terminal = terminal
        self.timeout_s = timeout_s
        self.port = port

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def redirect_uri(self) -> str:
        return self.base_url + CALLBACK_PATH

    async def ready(self, tool: Tool, server: str) -> None:
        """Returns when the person may call ``server``: connected already, or now."""
        found = await self.side.tokens_for(self.account, server).fresh()
        if isinstance(found, Held):
            return
        if isinstance(found, Unavailable):
            raise SignInUnavailable(tool.name, server)
        await self._connect(tool, server, None)

    async def sign_in(self, tool: Tool, server: str, needed: SignInRequired) -> NoReturn:
        """The server refused the running call before it started: sign in again, then the
        model calls it again (the call cannot be sent twice from here)."""
        await self._connect(tool, server, needed.pending)
        raise NotConnected(tool.name, server, CONNECTED_NOW.format(tool=tool.name, server=server))

    async def _connect(self, tool: Tool, server: str, pending: PendingAuthorization | None) -> None:
        """Sign the person in at the terminal; returns once connected (or when the server
        needs no token after all)."""
        if not self.terminal.interactive:
            raise NotConnected(tool.name, server, NO_TERMINAL.format(tool=tool.name, server=server))
        if pending is None:
            pending = await self._begin(tool, server)
            if pending is None:
                return
        try:
            site = await self._site()
        except OSError:  # the port is taken (another console signing in?)
            port = PORT_TAKEN.format(tool=tool.name, server=server, port=self.port)
            raise NotConnected(tool.name, server, port) from None
        try:
            url = await self.side.sign_ins.begin(
                self.account,
                server,
                pending,
                request_id=None,
                external=False,
                ttl_s=self.timeout_s,
                base_url=self.base_url,
            )
            err = self.terminal.err
            err.write(f"  Sign in to {server}: {url}\n")
            err.flush()
            end = await self._wait(pending.state)
        finally:
            await site.cleanup()
        person = self.account.user
        if end == "connected":
            err.write(f"  Connected to {server}.\n")
            err.flush()
            return
        if end == "failed":
            raise SignInFailed(tool.name, person, server)
        if end == "unavailable":
            raise SignInUnavailable(tool.name, server)
        if end is None:
            raise NotConnected.expired(tool.name, person, server, duration(self.timeout_s))
        raise NotConnected.declined(tool.name, person, server)  # Ctrl-C, or at the server

    async def _begin(self, tool: Tool, server: str) -> PendingAuthorization | None:
        personal = self.personal.get(server)
        if personal is None:
            return None
        try:
            return await personal.begin(self.account, redirect_uri=self.redirect_uri)
        except GrantUnavailable:
            raise SignInUnavailable(tool.name, server) from None
        except GrantRefused:
            raise SignInFailed(tool.name, self.account.user, server) from None

    async def _wait(self, state: str) -> str | None:
        """How the sign-in ended (``SignIns.wait_finished``; None: not within the time;
        ``declined``: they pressed Ctrl-C). The call's clock is stopped meanwhile."""
        given_up = asyncio.Event()
        call = current_call()
        with (
            call.clock_stopped() if call is not None else contextlib.nullcontext(),
            self.terminal.ctrl_c.calls(given_up.set),
        ):
            waiting = asyncio.ensure_future(self.side.sign_ins.wait_finished(state, self.timeout_s))
            interrupted = asyncio.ensure_future(given_up.wait())
            try:
                await asyncio.wait((waiting, interrupted), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (waiting, interrupted):
                    task.cancel()
                await asyncio.gather(waiting, interrupted, return_exceptions=True)
            if given_up.is_set():
                return "declined"
            return waiting.result()

    async def _site(self) -> web.AppRunner:
        """The sign-in's pages on the loopback address (cleaned up once the sign-in is
        over)."""
        app = web.Application()
        app.add_routes(self.routes)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, LOOPBACK, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        return runner
