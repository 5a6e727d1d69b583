"""``MemoryTokens``: a person's token in one process, refreshed once when it runs short."""

from __future__ import annotations

import asyncio
import time

import httpx2
from pydantic import AnyUrl

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.people import Person, sign_in
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.tokens import Gone, Held, TokenSnapshot, Unavailable


def expiring(snapshot: TokenSnapshot, in_s: float) -> TokenSnapshot:
    return snapshot.model_copy(update={"expires_at": time.time() + in_s})


async def test_a_short_lived_token_is_refreshed_once(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    tokens = MemoryTokens(expiring(await sign_in(Person(files.url, MemoryTokens())), 5))

    found = await asyncio.gather(*(tokens.fresh() for _ in range(5)))

    assert auth_server.authority.grants["refresh_token"] == 1
    assert all(isinstance(held, Held) and held.ver == 2 for held in found)
    assert len({held.snapshot.token.access_token for held in found if isinstance(held, Held)}) == 1
    assert isinstance(await tokens.fresh(), Held)  # an hour's token: no second refresh
    assert auth_server.authority.grants["refresh_token"] == 1


async def test_after_a_401_only_the_refused_version_is_refreshed(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    tokens = MemoryTokens(await sign_in(Person(files.url, MemoryTokens())))

    newer = await tokens.fresh(after_401_of=1)
    again = await tokens.fresh(after_401_of=1)  # a request that carried version 1 too

    assert isinstance(newer, Held) and newer.ver == 2
    assert again == newer
    assert auth_server.authority.grants["refresh_token"] == 1


async def test_a_refused_refresh_forgets(auth_server: AuthServer, files: PersonalMcp) -> None:
    tokens = MemoryTokens(await sign_in(Person(files.url, MemoryTokens())))
    async with httpx2.AsyncClient() as http:
        await http.post(f"{auth_server.url}/_test/revoke", params={"user": "alice"})

    assert await tokens.fresh(after_401_of=1) == Gone()
    assert await tokens.fresh() == Gone()


async def test_an_unavailable_refresh_keeps_the_token(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    snapshot = await sign_in(Person(files.url, MemoryTokens()))
    assert snapshot.oauth_metadata is not None
    failing = snapshot.oauth_metadata.model_copy(
        update={"token_endpoint": AnyUrl(f"{auth_server.url}/_test/status/503")}
    )
    tokens = MemoryTokens(snapshot.model_copy(update={"oauth_metadata": failing}))

    assert await tokens.fresh(after_401_of=1) == Unavailable("status_503")
    held = await tokens.fresh()
    assert isinstance(held, Held) and held.ver == 1
