"""The test servers themselves: each person's tool list and its cache hints, and both servers
run as processes (as replicas and the e2e tests share them)."""

from __future__ import annotations

import httpx2
import mcp_types as types
from mcp.client.client import Client

from tests.fakes.oauth_server import AuthServer, AuthServerProcess
from tests.fakes.personal_mcp import PersonalMcp, PersonalMcpProcess
from tests.tools.mcp.oauth.people import Person, sign_in, whoami
from tools.mcp.oauth.memory import MemoryTokens


async def listing(client: Client) -> types.ListToolsResult:
    return await client.list_tools()


async def test_each_person_has_their_own_list_with_the_hints(auth_server: AuthServer) -> None:
    with PersonalMcp(auth_server.url, list_ttl_ms=60_000, list_scope="public") as files:
        for user, names in (
            ("alice", ["read_private", "whoami", "write_note"]),
            ("bob", ["read_private", "whoami"]),
        ):
            tokens = MemoryTokens(await sign_in(Person(files.url, MemoryTokens()), user))
            found = await Person(files.url, tokens).attempt(listing)
            assert isinstance(found, types.ListToolsResult)
            assert sorted(tool.name for tool in found.tools) == names
            assert (found.ttl_ms, found.cache_scope) == (60_000, "public")


async def test_the_servers_as_processes() -> None:
    authority = AuthServerProcess("--user", "bob", "--expires-in", "600")
    authority.start()
    files = PersonalMcpProcess(authority.url, "--legacy")
    try:
        files.start()
        tokens = MemoryTokens(await sign_in(Person(files.url, MemoryTokens()), "nobody-asked"))
        assert tokens.snapshot is not None and tokens.snapshot.token.expires_in == 600

        async def who_and_how(client: Client) -> tuple[str, str | None]:
            return await whoami(client), client.protocol_version

        # /authorize signed bob in at once: the browser named nobody.
        assert await Person(files.url, tokens).attempt(who_and_how) == ("bob", "2025-11-25")
        async with httpx2.AsyncClient() as http:
            counts = (await http.get(f"{authority.url}/_test/counts")).json()
        assert counts["grants"] == {"authorization_code": 1}
        assert counts["registrations"] == 1
    finally:
        files.kill()
        authority.kill()
