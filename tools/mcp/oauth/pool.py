"""Each person's own session with an MCP server that signs each person in, in a bounded pool.

One shared session cannot carry several people's tokens, so each person gets their own
:class:`PersonalSession`: an SDK ``Client`` whose HTTP requests carry that person's token
(``BotOAuthProvider``), opened and closed by an owner task of its own (the SDK's anyio
scopes are entered and left in one task, as ``supervisor.py`` does), and used from the
callers' tasks.

Every operation (opening, listing, a call) races the session's ``sign_in`` future, which the
provider sets when the server refused the person's token and the SDK built a new
authorization request (the capture, ``provider.py``): then the session is closed (its task
cancelled, which ends the provider's wait and the refused request: nothing is logged, no task
is left) and the operation raises ``SignInRequired`` with that request. Every operation on
the session at that moment gets the same one. When the person's tokens cannot be read now
(``Unavailable``), the operation raises :class:`TokensUnavailable` the same way; when the
SDK's discovery or registration failed before it built a request (the provider's
``FlowFailed``), ``GrantRefused`` (the authorization server refused: a wrong issuer, a
refused registration) or ``GrantUnavailable`` (it failed: 5xx, 429), each with a fixed
reason word, said once in a plain warning line.

:class:`SessionPool` holds one session per person for one server: at ``max_sessions``, the
least recently used session with nothing running is closed to make room; when every session
is busy, the new one is opened, used and closed (a person is never refused). A session idle
for ``idle_s`` is closed. A session whose provider found the person's token gone
(disconnected, or its refresh refused) is closed once its request is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import anyio
from mcp.client import Client

from tools.mcp.calls import McpUnavailable
from tools.mcp.failures import describe
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.grants import GrantError, GrantRefused, GrantUnavailable
from tools.mcp.oauth.pending import PendingAuthorization, SignInRequired
from tools.mcp.oauth.provider import FlowFailed
from tools.mcp.oauth.tokens import Freshness, Gone, PersonTokens, Unavailable

log = logging.getLogger(__name__)

T = TypeVar("T")
STOP_TIMEOUT_S = 10.0
REAP_EVERY_MAX_S = 30.0


class TokensUnavailable(Exception):
    """The person's tokens could not be read or refreshed right now (the connection is kept)."""

    def __init__(self, why: str) -> None:
        self.why = why
        super().__init__(f"the sign-in service is unavailable right now ({why})")


# Opens the person's client for a session (entered and left in the session's owner task).
Connect = Callable[["PersonalSession"], AbstractAsyncContextManager[Client]]


class WatchedTokens:
    """A person's ``PersonTokens`` as the session's provider sees them: what the last answer
    was is told to the session (a ``Gone`` token closes it after its request)."""

    def __init__(self, tokens: PersonTokens, session: PersonalSession) -> None:
        self.tokens = tokens
        self.session = session

    async def fresh(self, *, after_401_of: int | None = None) -> Freshness:
        found = await self.tokens.fresh(after_401_of=after_401_of)
        self.session.gone = isinstance(found, Gone)
        return found


class PersonalSession:
    """One person's client for one server, owned by a task of its own."""

    def __init__(self, server: str, account: Account, connect: Connect) -> None:
        loop = asyncio.get_running_loop()
        self.server = server
        self.account = account
        self.sign_in: asyncio.Future[PendingAuthorization] = loop.create_future()
        self.unavailable: asyncio.Future[Unavailable] = loop.create_future()
        self.failed: asyncio.Future[FlowFailed] = loop.create_future()
        self.ready = asyncio.Event()
        self.closed = asyncio.Event()
        self.client: Client | None = None  # the live client (None: not open, or closed)
        self.busy = 0  # operations using it now (opening included)
        self.last_used = time.monotonic()
        self.gone = False  # the provider found the person's token gone
        self.broken: str | None = None  # why the connection is known to be dead
        self.failure: BaseException | None = None  # why it could not open, or ended
        self._connect = connect
        self._closing = asyncio.Event()
        self._scope: anyio.CancelScope | None = None
        self._task: asyncio.Task[None] | None = None
        self._opening: asyncio.Task[None] | None = None

    # What the provider reports (it then waits until the session is closed).

    def on_pending(self, pending: PendingAuthorization) -> None:
        if not self.sign_in.done():
            self.sign_in.set_result(pending)

    def on_unavailable(self, unavailable: Unavailable) -> None:
        if not self.unavailable.done():
            self.unavailable.set_result(unavailable)

    def on_failed(self, failed: FlowFailed) -> None:
        if self.failed.done():
            return
        self.failed.set_result(failed)
        log.warning(
            "MCP server %s: a person's sign-in could not be prepared (%s: %s)",
            self.server,
            "refused" if failed.refused else "unavailable",
            failed.reason,
        )

    def watched(self, tokens: PersonTokens) -> WatchedTokens:
        return WatchedTokens(tokens, self)

    def mark_broken(self, reason: str) -> None:
        """A call found the connection dead: the session closes (the next use opens anew)."""
        if self.broken is None:
            self.broken = reason
            self.client = None
            self._closing.set()

    @property
    def usable(self) -> bool:
        return not self.closed.is_set() and self.broken is None and not self.interrupted

    @property
    def interrupted(self) -> bool:
        return self.sign_in.done() or self.unavailable.done() or self.failed.done()

    # Its life.

    async def open(self) -> None:
        """Open it (once; concurrent callers wait for the same opening). Raises
        ``SignInRequired``, :class:`TokensUnavailable`, ``GrantRefused``,
        ``GrantUnavailable`` or ``McpUnavailable``."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        await asyncio.shield(self._opening)

    async def _open(self) -> None:
        self._task = asyncio.create_task(self._own(), name=f"mcp-{self.server}-person")
        await self._first_of(self.ready.wait())
        if self.client is None or self.interrupted:
            await self.close()
            raise self._why_closed()

    async def _own(self) -> None:
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with self._connect(self) as client:
                    self.client = client
                    self.ready.set()
                    await self._closing.wait()
        except Exception as exc:  # anyio wraps failures in exception groups
            self.failure = exc
        finally:
            self.client = None
            self.closed.set()

    async def run(self, operation: Callable[[PersonalSession], Awaitable[T]]) -> T:
        """``operation`` on the open session, raced against a sign-in, the tokens being
        unavailable or a failed discovery (then the session is closed and that is
        raised)."""
        done, result = await self._first_of(operation(self))
        if not done:
            await self.close()
            raise self._why_closed()
        return result  # type: ignore[return-value]

    async def _first_of(self, work: Awaitable[T]) -> tuple[bool, T | None]:
        """``(True, work's result)``; or ``(False, None)`` when the session was interrupted
        or closed first (the work is cancelled then). What ``work`` raised is raised, unless
        the session was interrupted meanwhile."""
        task = asyncio.ensure_future(work)
        closed = asyncio.ensure_future(self.closed.wait())
        waits: set[asyncio.Future[Any]] = {task, closed, self.sign_in, self.unavailable}
        waits.add(self.failed)
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if task.cancelled() or (task.exception() is not None and self.interrupted):
            return False, None
        return True, task.result()

    def _why_closed(self) -> BaseException:
        if self.sign_in.done():
            return SignInRequired(self.sign_in.result())
        if self.unavailable.done():
            return TokensUnavailable(self.unavailable.result().why or "unavailable")
        if self.failed.done():
            failed = self.failed.result()
            kind: type[GrantError] = GrantRefused if failed.refused else GrantUnavailable
            return kind(failed.reason)
        why = describe(self.failure) if self.failure is not None else self.broken or "closed"
        log.info("MCP server %s: a person's session could not be used (%s)", self.server, why)
        return McpUnavailable(f"The MCP server {self.server} is unavailable right now.")

    async def close(self) -> None:
        """End the session: gently (the client's own shutdown) unless a sign-in, the tokens
        or a failed discovery interrupted it, which ends it at once (the provider holds a
        refused request)."""
        task = self._task
        if task is None or task.done():
            self.closed.set()
            return
        if self.interrupted and self._scope is not None:
            self._scope.cancel()
        self._closing.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT_S)
        except (TimeoutError, asyncio.CancelledError, Exception):
            if self._scope is not None:
                self._scope.cancel()
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class SessionPool:
    """The sessions of one server, one per person, bounded (see the module)."""

    def __init__(
        self, server: str, connect: Connect, *, max_sessions: int = 200, idle_s: float = 300.0
    ) -> None:
        self.server = server
        self.connect = connect
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self.sessions: OrderedDict[Account, PersonalSession] = OrderedDict()  # LRU first
        self.evicted = 0  # sessions closed to make room or for idleness
        self._reaper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    async def run(
        self, account: Account, operation: Callable[[PersonalSession], Awaitable[T]]
    ) -> T:
        """``operation`` on ``account``'s session (opened if needed). Raises
        ``SignInRequired``, :class:`TokensUnavailable`, ``GrantRefused``,
        ``GrantUnavailable`` or ``McpUnavailable``."""
        async with self.using(account) as session:
            return await session.run(operation)

    @contextlib.asynccontextmanager
    async def using(self, account: Account) -> AsyncIterator[PersonalSession]:
        session = self.sessions.get(account)
        if session is None or not session.usable:
            session = self._new(account)
        else:
            self.sessions.move_to_end(account)
        session.busy += 1
        try:
            await session.open()
            yield session
        finally:
            session.busy -= 1
            session.last_used = time.monotonic()
            if session.gone or not session.usable:
                self._forget(session)  # the next use opens a new one
            if self.sessions.get(account) is not session and (
                session.busy == 0 or not session.usable
            ):
                await session.close()

    def _new(self, account: Account) -> PersonalSession:
        """A new session for ``account``: pooled, making room by closing the least recently
        used idle session when full; when every session is busy, not pooled (it is closed
        after its use)."""
        old = self.sessions.pop(account, None)
        if old is not None:
            self._close_later(old)
        session = PersonalSession(self.server, account, self.connect)
        if len(self.sessions) >= self.max_sessions:
            idle = next((s for s in self.sessions.values() if s.busy == 0), None)
            if idle is None:
                return session  # all busy: used once, then closed
            self._evict(idle, "full")
        self.sessions[account] = session
        self._reap_soon()
        return session

    def _forget(self, session: PersonalSession) -> None:
        if self.sessions.get(session.account) is session:
            del self.sessions[session.account]

    def _evict(self, session: PersonalSession, why: str) -> None:
        log.debug("MCP server %s: closing a person's session (%s)", self.server, why)
        self.evicted += 1
        self._forget(session)
        self._close_later(session)

    def _close_later(self, session: PersonalSession) -> None:
        task = asyncio.create_task(session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _reap_soon(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap(), name=f"mcp-{self.server}-idle")

    async def _reap(self) -> None:
        """Close the sessions idle for ``idle_s``, until none is left."""
        every = min(max(self.idle_s / 4, 0.01), REAP_EVERY_MAX_S)
        while self.sessions:
            await asyncio.sleep(every)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if session.busy == 0 and now - session.last_used >= self.idle_s:
                    self._evict(session, "idle")

    async def close(self) -> None:
        """Close every session."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        sessions = list(self.sessions.values())
        self.sessions.clear()
        await asyncio.gather(*(session.close() for session in sessions))
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
