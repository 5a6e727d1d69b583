"""What a person who is not connected is offered: "connect to use" copies of what the server
lists without a token (or last listed as public), else one connect tool; once connected,
a copy runs the person's own tool (plan §4.3)."""

from __future__ import annotations

from typing import Literal

import pytest

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.wiring import ALICE, BOB, People
from tools.errors import ToolError
from tools.mcp.oauth.pending import SignInRequired

COPY = "Connect files to use this tool: calling it asks the person to sign in."


async def test_the_token_less_listing_is_offered_as_copies(auth_server: AuthServer) -> None:
    people = People()
    with PersonalMcp(auth_server.url, anonymous_list=True) as files:
        server = people.server(files.url)
        try:
            offered = {t.name: t for t in await server.tools_for(BOB)}

            assert sorted(offered) == ["files_whoami", "files_write_note"]  # nobody's list
            assert all(t.description.startswith(COPY) for t in offered.values())
            assert all(t.per_person and t.source == "mcp files" for t in offered.values())
            copy = offered["files_whoami"]
            # The server connects without a token: no sign-in before the call...
            assert await server.begin(BOB) is None
            # ...whose refusal (401) is the sign-in: the call did not start.
            with pytest.raises(SignInRequired) as needed:
                await copy.invoke({})

            await people.finish(server, BOB, needed.value.pending, "bob")

            # The copy the model was offered runs bob's own tool.
            assert await copy.invoke({}) == "bob"
            # Bob's own list has no write_note: the copy says so, nothing runs.
            with pytest.raises(ToolError, match="not available to your account on files"):
                await offered["files_write_note"].invoke({"text": "hi"})
            assert sorted(t.name for t in await server.tools_for(BOB)) == [
                "files_read_private",
                "files_whoami",
            ]
        finally:
            await server.close()


async def test_nothing_listed_offers_the_connect_tool(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    people = People()
    server = people.server(files.url)
    try:
        (connect,) = await server.tools_for(BOB)

        assert connect.name == "files_connect"
        assert connect.description.startswith("Sign in to files to use its tools.")
        assert connect.per_person and connect.source == "mcp files"
        assert files.listed["nobody"] == 0  # the server refused the token-less listing

        await people.connect(server, BOB, "bob")

        assert await connect.invoke({}) == (
            "Connected to files; its tools are offered from the next step: "
            "files_read_private, files_whoami"
        )
    finally:
        await server.close()


async def test_a_public_listing_is_offered_to_the_unconnected(auth_server: AuthServer) -> None:
    people = People()
    with PersonalMcp(auth_server.url, list_ttl_ms=60_000, list_scope="public") as files:
        server = people.server(files.url)
        try:
            await people.connect(server, ALICE, "alice")
            await server.tools_for(ALICE)

            copies = {t.name: t for t in await server.tools_for(BOB)}

            assert sorted(copies) == ["files_read_private", "files_whoami", "files_write_note"]
            assert all(t.description.startswith(COPY) for t in copies.values())
            await people.connect(server, BOB, "bob")
            assert await copies["files_read_private"].invoke({"name": "plan"}) == (
                "bob's plan: review the sign-in"
            )
        finally:
            await server.close()


@pytest.mark.parametrize(
    ("pages", "offered"),
    [
        (("public", "public"), ["files_read_private", "files_whoami", "files_write_note"]),
        # Page 2 (read_private, write_note) is alice's alone: nothing of it reaches bob.
        (("public", "private"), ["files_connect"]),
    ],
)
async def test_a_listing_is_offered_to_the_unconnected_only_when_every_page_is_public(
    auth_server: AuthServer, pages: tuple[Literal["public", "private"], ...], offered: list[str]
) -> None:
    people = People()
    with PersonalMcp(auth_server.url, list_ttl_ms=60_000, list_pages=pages) as files:
        server = people.server(files.url)
        try:
            await people.connect(server, ALICE, "alice")
            assert sorted(t.name for t in await server.tools_for(ALICE)) == [
                "files_read_private",
                "files_whoami",
                "files_write_note",
            ]

            assert sorted(t.name for t in await server.tools_for(BOB)) == offered
        finally:
            await server.close()
