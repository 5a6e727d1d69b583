"""The sign-in gate before approval, and the toolset that adds each person's own tools
(plan §4.1, §5.1)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NoReturn, cast

import pytest
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.people import REDIRECT
from tests.tools.mcp.oauth.wiring import ALICE, BOB, People
from tools.approval import ApprovalToolset, Approved, Verdict
from tools.definition import Tool, tool
from tools.errors import CallDeferred, ToolArgumentsError
from tools.mcp.oauth.gate import PersonalToolset, SignInToolset
from tools.mcp.oauth.pending import PendingAuthorization, SignInRequired
from tools.mcp.oauth.personal import PersonalServer
from tools.registry import ToolRegistry
from tools.toolset import StaticToolset

PENDING = PendingAuthorization(
    server_url="https://rs.example/mcp",
    authorization_url="https://as.example/authorize?state=s",
    state="s",
    code_verifier="v" * 43,
    redirect_uri=REDIRECT,
    client_info=OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl(REDIRECT)]),
    issuer="https://as.example",
)


class Connector:
    """Connected or not as the test says; every question recorded in ``events``."""

    def __init__(self, events: list[str], *, connected: bool) -> None:
        self.events = events
        self.connected = connected
        self.asked_again: list[SignInRequired] = []

    async def ready(self, tool: Tool, server: str) -> None:
        self.events.append(f"ready {tool.name} {server}")
        if not self.connected:
            raise CallDeferred(tool.name, f"waiting for the person to connect {server}")

    async def sign_in(self, tool: Tool, server: str, needed: SignInRequired) -> NoReturn:
        self.events.append(f"sign in {tool.name} {server}")
        self.asked_again.append(needed)
        raise CallDeferred(tool.name, f"waiting for the person to connect {server} again")


class Approver:
    """Approves every call; counts the runs given back."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.given_back = 0

    async def __call__(self, tool: Tool, arguments: dict[str, Any]) -> Verdict:
        self.events.append(f"approve {tool.name}")
        return Approved()

    async def not_started(self, tool: Tool) -> None:
        self.events.append(f"given back {tool.name}")
        self.given_back += 1


def write_tool(events: list[str], *, refused: bool = False) -> Tool:
    """A personal server's tool that needs approval; ``refused``: the server answers 401."""

    def check(arguments: dict[str, Any]) -> None:
        if not isinstance(arguments.get("text"), str):
            raise ToolArgumentsError("files_write_note", [("text", "required")])

    async def invoke(arguments: dict[str, Any]) -> str:
        check(arguments)
        events.append("run")
        if refused:
            raise SignInRequired(PENDING)
        return "noted"

    return Tool(
        name="files_write_note",
        description="Adds a note.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        invoke=invoke,
        confirm=True,
        check=check,
        source="mcp files",
        per_person=True,
    )


PERSONAL = cast(Mapping[str, PersonalServer], {"files": object()})


def gated(events: list[str], tool: Tool, *, connected: bool) -> tuple[SignInToolset, Connector]:
    connector = Connector(events, connected=connected)
    inner = ApprovalToolset(StaticToolset([tool]), Approver(events))
    return SignInToolset(inner, connector, PERSONAL), connector


async def test_sign_in_is_checked_before_anyone_is_asked_to_approve() -> None:
    events: list[str] = []
    toolset, connector = gated(events, write_tool(events), connected=False)

    with pytest.raises(CallDeferred):
        await (await toolset.get_tool("files_write_note")).invoke({"text": "hi"})
    assert events == ["ready files_write_note files"]  # nobody asked, nothing run

    connector.connected = True
    assert await (await toolset.get_tool("files_write_note")).invoke({"text": "hi"}) == "noted"
    assert events[1:] == ["ready files_write_note files", "approve files_write_note", "run"]


async def test_a_refusal_after_approval_gives_it_back_and_asks_to_sign_in() -> None:
    events: list[str] = []
    tool = write_tool(events, refused=True)
    approver = Approver(events)
    connector = Connector(events, connected=True)
    toolset = SignInToolset(ApprovalToolset(StaticToolset([tool]), approver), connector, PERSONAL)

    with pytest.raises(CallDeferred):
        await (await toolset.get_tool("files_write_note")).invoke({"text": "hi"})

    assert events == [
        "ready files_write_note files",
        "approve files_write_note",
        "run",
        "given back files_write_note",  # refused at the door: not a run
        "sign in files_write_note files",
    ]
    assert approver.given_back == 1
    assert [needed.pending for needed in connector.asked_again] == [PENDING]


async def test_invalid_arguments_ask_nobody() -> None:
    events: list[str] = []
    toolset, _ = gated(events, write_tool(events), connected=True)

    with pytest.raises(ToolArgumentsError):
        await (await toolset.get_tool("files_write_note")).invoke({"text": 3})

    assert events == []


async def test_other_tools_pass_untouched() -> None:
    events: list[str] = []

    @tool
    def get_time() -> str:
        """The time."""
        return "noon"

    toolset, _ = gated(events, get_time, connected=False)

    assert await (await toolset.get_tool("get_time")).invoke({}) == "noon"
    assert events == []


async def test_each_person_gets_their_own_tools_beside_the_registry(
    auth_server: AuthServer, files: PersonalMcp, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    def files_whoami() -> str:
        """A registry tool whose name the server's tool would have."""
        return "the registry's"

    registry = ToolRegistry()
    registry.add(files_whoami)
    people = People()
    server = people.server(files.url)
    try:
        await people.connect(server, ALICE, "alice")
        personal = {"files": server}
        alice = PersonalToolset(registry, personal, ALICE)
        bob = PersonalToolset(registry, personal, BOB)

        for _ in range(2):
            listed = await alice.list_tools()
            assert [t.name for t in listed] == [
                "files_whoami",
                "files_read_private",
                "files_write_note",
            ]
        assert listed[0].source != "mcp files"  # the registry's tool keeps the name
        warned = [r for r in caplog.records if "files_whoami" in r.getMessage()]
        assert len(warned) == 1 and warned[0].levelno == logging.WARNING

        assert await (await alice.get_tool("files_whoami")).invoke({}) == "the registry's"
        read = await alice.get_tool("files_read_private")
        assert read.per_person
        assert await read.invoke({"name": "notes"}) == "alice keeps her notes here"
        # Bob is not connected: he is offered the connect tool, and none of alice's.
        assert [t.name for t in await bob.list_tools()] == ["files_whoami", "files_connect"]
        with pytest.raises(Exception, match="no tool named"):
            await bob.get_tool("files_read_private")
    finally:
        await server.close()
