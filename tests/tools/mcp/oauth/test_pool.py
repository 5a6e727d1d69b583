"""The pool of each person's own sessions: bounded, least recently used idle one closed first,
idle ones closed, busy ones never; a sign-in captured mid-way closes its session and leaves
nothing behind (plan §4.2)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from mcp.client import Client

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.wiring import ALICE, BOB, People
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.errors import SignInUnavailable
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import SignInRequired
from tools.mcp.oauth.pool import PersonalSession, SessionPool
from tools.mcp.oauth.tokens import Freshness, Unavailable

CAROL = Account("T1", "U_CAROL")


class Opened:
    """A stand-in for the person's client: who it was opened for, and when it is closed."""

    def __init__(self) -> None:
        self.open: list[Account] = []
        self.closed: list[Account] = []

    @contextlib.asynccontextmanager
    async def connect(self, session: PersonalSession) -> AsyncIterator[Client]:
        self.open.append(session.account)
        try:
            yield cast(Client, object())
        finally:
            self.closed.append(session.account)


async def whose(session: PersonalSession) -> Account:
    return session.account


async def test_full_pool_closes_the_least_recently_used_idle_session() -> None:
    opened = Opened()
    pool = SessionPool("files", opened.connect, max_sessions=2, idle_s=3600)
    try:
        assert await pool.run(ALICE, whose) == ALICE
        assert await pool.run(BOB, whose) == BOB
        assert await pool.run(ALICE, whose) == ALICE  # bob is now the least recently used
        bob = pool.sessions[BOB]

        assert await pool.run(CAROL, whose) == CAROL

        await bob.closed.wait()
        assert list(pool.sessions) == [ALICE, CAROL]
        assert opened.open == [ALICE, BOB, CAROL]  # alice's session was used again
        assert pool.evicted == 1
    finally:
        await pool.close()
    assert sorted(opened.closed, key=lambda a: a.user) == [ALICE, BOB, CAROL]


async def test_a_busy_session_is_never_evicted() -> None:
    opened = Opened()
    pool = SessionPool("files", opened.connect, max_sessions=1, idle_s=3600)
    started, release = asyncio.Event(), asyncio.Event()

    async def hold(session: PersonalSession) -> Account:
        started.set()
        await release.wait()
        return session.account

    try:
        alice = asyncio.create_task(pool.run(ALICE, hold))
        await started.wait()

        # The pool is full and alice's session is busy: bob's is opened, used and closed.
        assert await pool.run(BOB, whose) == BOB
        assert opened.closed == [BOB]
        assert list(pool.sessions) == [ALICE]
        assert not pool.sessions[ALICE].closed.is_set()

        release.set()
        assert await alice == ALICE
        assert list(pool.sessions) == [ALICE] and pool.evicted == 0
    finally:
        await pool.close()


async def test_idle_sessions_are_closed() -> None:
    opened = Opened()
    pool = SessionPool("files", opened.connect, max_sessions=10, idle_s=0.05)
    try:
        await pool.run(ALICE, whose)
        session = pool.sessions[ALICE]
        await asyncio.wait_for(session.closed.wait(), 5)
        assert opened.closed == [ALICE]
        assert not pool.sessions and pool.evicted == 1
        # The next use opens a new one.
        assert await pool.run(ALICE, whose) == ALICE
        assert opened.open == [ALICE, ALICE]
    finally:
        await pool.close()


async def test_concurrent_uses_share_one_opening() -> None:
    opened = Opened()
    pool = SessionPool("files", opened.connect)
    try:
        found = await asyncio.gather(*(pool.run(ALICE, whose) for _ in range(5)))
        assert found == [ALICE] * 5
        assert opened.open == [ALICE]
    finally:
        await pool.close()


async def test_a_sign_in_closes_the_session_and_leaves_no_task(
    auth_server: AuthServer, files: PersonalMcp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    people = People()
    server = people.server(files.url)
    try:
        await people.connect(server, ALICE, "alice")
        assert [t.name for t in await server.tools_for(ALICE)]  # her session is open
        session = server.pool.sessions[ALICE]
        before = asyncio.all_tasks()
        people.tokens_for(ALICE, "files").forget()  # disconnected elsewhere

        async def whoami(session: PersonalSession) -> Any:
            assert session.client is not None
            return await session.client.call_tool("whoami", {})

        # Two calls on her session at once: both get the same sign-in.
        found = await asyncio.gather(
            server.pool.run(ALICE, whoami), server.pool.run(ALICE, whoami), return_exceptions=True
        )

        assert all(isinstance(one, SignInRequired) for one in found), found
        first, second = cast(list[SignInRequired], found)
        assert first.pending is second.pending
        assert session.closed.is_set() and ALICE not in server.pool.sessions
        assert asyncio.all_tasks() <= before
        for record in caplog.records:
            assert record.levelno < logging.WARNING, record.getMessage()
            assert first.pending.state not in record.getMessage()
    finally:
        await server.close()


async def test_a_gone_token_closes_the_session_after_its_request() -> None:
    opened = Opened()
    pool = SessionPool("files", opened.connect)

    async def token_gone(session: PersonalSession) -> str:
        # What the provider sees before a request (a server that answers without a token).
        await session.watched(MemoryTokens()).fresh()
        return "answered"

    try:
        assert await pool.run(ALICE, whose) == ALICE
        session = pool.sessions[ALICE]

        assert await pool.run(ALICE, token_gone) == "answered"

        assert session.gone and session.closed.is_set()
        assert opened.closed == [ALICE] and ALICE not in pool.sessions
    finally:
        await pool.close()


async def test_tokens_that_cannot_be_read_send_nothing(files: PersonalMcp) -> None:
    class Away:
        async def fresh(self, *, after_401_of: int | None = None) -> Freshness:
            return Unavailable("redis")

    people = People()
    people.tokens[(ALICE, "files")] = cast(MemoryTokens, Away())
    server = people.server(files.url)
    try:
        (connect,) = await server.tools_for(ALICE)  # not known to be connected: the connect tool

        with pytest.raises(SignInUnavailable, match="files's sign-in service is unavailable"):
            await connect.invoke({})

        assert ALICE not in server.pool.sessions
        assert files.listed == {}  # nothing reached the server's tools
    finally:
        await server.close()
