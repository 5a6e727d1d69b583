"""`/agent tools` with a server that signs each person in: named as such, with how to connect
and what is offered until then (no person's session is opened), within the person's roles."""

from __future__ import annotations

from typing import cast

from bot.admin.context import AdminStores, Caller, plain_link
from bot.admin.reports import AdminReports
from permissions import Policy, RoleConfig, RoleResolver
from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.wiring import People
from tools import tool
from tools.mcp.oauth.personal import PersonalServer
from tools.registry import ToolRegistry

ROLES = {
    "member": RoleConfig(default=True, tools=["get_time", "files_whoami", "files_connect"]),
}
CALLER = Caller("T1", "U_BOB", "C1", user_team="T1")


@tool
def get_time() -> str:
    """The time."""
    return "10:00"


def reports(people: People, url: str) -> tuple[AdminReports, PersonalServer]:
    registry = ToolRegistry()
    registry.add(get_time)
    server = people.server(url)
    found = AdminReports(
        "/agent",
        Policy(ROLES, RoleResolver(ROLES)),
        registry,
        ROLES,
        cast(AdminStores, None),  # `tools` reads no store
        plain_link,
        {"files": server},
    )
    return found, server


async def test_connect_to_use_names_within_the_roles() -> None:
    people = People()
    with AuthServer() as auth, PersonalMcp(auth.url, anonymous_list=True) as files:
        report, server = reports(people, files.url)
        try:
            said = await report.tools(CALLER, [])
        finally:
            await server.close()
    assert said == (
        "*Your tools here:*\n"
        "• `get_time` — The time.\n"
        "*Sign in to use:*\n"
        "• *files* signs each person in: connect with `/agent connect files` — offered until "
        "then: `files_whoami`"  # write_note: not in the member's role
    )
    assert files.listed["nobody"] >= 1 and set(files.listed) == {"nobody"}  # no person's


async def test_nothing_listed_offers_the_connect_tool() -> None:
    people = People()
    with AuthServer() as auth, PersonalMcp(auth.url) as files:
        report, server = reports(people, files.url)
        try:
            said = await report.tools(CALLER, [])
        finally:
            await server.close()
    assert said.endswith(
        "• *files* signs each person in: connect with `/agent connect files` — offered until "
        "then: `files_connect`"
    )
