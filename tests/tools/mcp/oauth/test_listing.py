"""Each person's own tool list from a server that signs each person in, through the SDK's
response cache partitioned per person (plan §4.3)."""

from __future__ import annotations

import pytest

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.wiring import ALICE, BOB, People
from tools.mcp.oauth.personal import PersonalServer

ALICE_TOOLS = ["files_read_private", "files_whoami", "files_write_note"]
BOB_TOOLS = ["files_read_private", "files_whoami"]


async def names(server: PersonalServer, *accounts: object) -> list[list[str]]:
    return [sorted(t.name for t in await server.tools_for(a)) for a in accounts]  # type: ignore[arg-type]


async def test_each_person_sees_and_calls_their_own(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    people = People()
    server = people.server(files.url)
    try:
        await people.connect(server, ALICE, "alice")
        await people.connect(server, BOB, "bob")

        alice, bob = await server.tools_for(ALICE), await server.tools_for(BOB)

        assert sorted(t.name for t in alice) == ALICE_TOOLS
        assert sorted(t.name for t in bob) == BOB_TOOLS
        assert all(t.per_person and t.source == "mcp files" for t in [*alice, *bob])
        read = {t.name: t for t in alice}["files_read_private"]
        assert await read.invoke({"name": "plan"}) == "alice's plan: ship the sign-in"
        read = {t.name: t for t in bob}["files_read_private"]
        assert await read.invoke({"name": "plan"}) == "bob's plan: review the sign-in"
        # Two people, two sessions.
        assert set(server.pool.sessions) == {ALICE, BOB}
    finally:
        await server.close()


@pytest.mark.parametrize(
    ("ttl_ms", "scope", "rounds", "alice", "bob"),
    [
        (60_000, "private", 3, 1, 1),  # fetched once per person within its ttl
        (0, "private", 3, 3, 3),  # ttlMs 0: every time
    ],
)
async def test_private_listing_per_person(
    auth_server: AuthServer, ttl_ms: int, scope: str, rounds: int, alice: int, bob: int
) -> None:
    people = People()
    with PersonalMcp(auth_server.url, list_ttl_ms=ttl_ms, list_scope=scope) as files:  # type: ignore[arg-type]
        server = people.server(files.url)
        try:
            await people.connect(server, ALICE, "alice")
            await people.connect(server, BOB, "bob")
            for _ in range(rounds):
                assert await names(server, ALICE, BOB) == [ALICE_TOOLS, BOB_TOOLS]
            assert files.listed["alice"] == alice
            assert files.listed["bob"] == bob
        finally:
            await server.close()


async def test_public_listing_is_fetched_once_for_everyone(auth_server: AuthServer) -> None:
    people = People()
    with PersonalMcp(auth_server.url, list_ttl_ms=60_000, list_scope="public") as files:
        server = people.server(files.url)
        try:
            await people.connect(server, ALICE, "alice")
            await people.connect(server, BOB, "bob")
            first = await names(server, ALICE)
            # Bob is served the listing the server said anyone may see.
            assert await names(server, BOB, ALICE, BOB) == [first[0]] * 3
            assert files.listed["alice"] + files.listed["bob"] == 1
        finally:
            await server.close()


async def test_a_2025_server_is_kept_list_ttl_s(auth_server: AuthServer) -> None:
    people = People()
    # The server's ttlMs 0 hint does not count on a 2025-11-25 connection: list_ttl_s does.
    with PersonalMcp(auth_server.url, list_ttl_ms=0, legacy=True) as files:
        server = people.server(files.url, list_ttl_s=60)
        try:
            await people.connect(server, ALICE, "alice")
            for _ in range(3):
                assert await names(server, ALICE) == [ALICE_TOOLS]
            assert files.listed["alice"] == 1
            client = server.pool.sessions[ALICE].client
            assert client is not None and client.protocol_version == "2025-11-25"
        finally:
            await server.close()
