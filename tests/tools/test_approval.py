"""A person's approval as a wrapper toolset: asked before the call runs, with the call's
clock stopped while they think; without anyone to ask, the call is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tools import ApprovalToolset, StaticToolset, Tool, tool
from tools.approval import Approved, Refused, Verdict
from tools.call_context import CallScope, calling
from tools.errors import CallNotStarted, NotApproved, ToolArgumentsError

ran: list[str] = []


@tool(confirm=True)
def delete_report(name: str) -> str:
    """Delete a report."""
    ran.append(name)
    return f"deleted {name}"


@tool
def read_report(name: str) -> str:
    """Read a report."""
    return f"report {name}"


TOOLS = StaticToolset([delete_report, read_report])


async def test_only_calls_that_need_it_are_asked_and_a_no_stops_the_call() -> None:
    ran.clear()
    asked: list[tuple[str, dict[str, Any]]] = []

    async def approver(t: Tool, arguments: dict[str, Any]) -> Verdict:
        asked.append((t.name, arguments))
        return Refused() if arguments["name"] == "q3" else Approved()

    toolset = ApprovalToolset(TOOLS, approver)
    assert [t.name for t in await toolset.list_tools()] == ["delete_report", "read_report"]
    assert await (await toolset.get_tool("read_report")).invoke({"name": "q1"}) == "report q1"
    wrapped = await toolset.get_tool("delete_report")
    assert not wrapped.confirm  # the requirement is met by this wrapper
    assert await wrapped.invoke({"name": "q2"}) == "deleted q2"
    with pytest.raises(NotApproved) as declined:
        await wrapped.invoke({"name": "q3"})
    assert declined.value.kind == "NotConfirmed"
    assert asked == [("delete_report", {"name": "q2"}), ("delete_report", {"name": "q3"})]
    assert ran == ["q2"]


async def test_without_an_approver_the_call_is_refused_unrun() -> None:
    ran.clear()
    wrapped = await ApprovalToolset(TOOLS, None).get_tool("delete_report")
    with pytest.raises(NotApproved) as refused:
        await wrapped.invoke({"name": "q4"})
    assert refused.value.kind == "NeedsConfirmation"
    assert ran == []


async def test_the_calls_clock_stops_while_the_person_is_asked() -> None:
    ran.clear()
    answered = asyncio.Event()

    async def slow_person(t: Tool, arguments: dict[str, Any]) -> Verdict:
        await asyncio.sleep(0.3)  # longer than the call may take
        answered.set()
        return Approved()

    wrapped = await ApprovalToolset(TOOLS, slow_person).get_tool("delete_report")
    async with asyncio.timeout(0.1) as deadline:
        with calling(CallScope("c1", "delete_report", deadline=deadline)):
            assert await wrapped.invoke({"name": "q5"}) == "deleted q5"
    assert answered.is_set() and ran == ["q5"]


async def test_invalid_arguments_are_refused_before_anyone_is_asked() -> None:
    """A call that does not fit the tool's schema is the model's to fix: nobody is asked
    (no approval request, no card, no y/N), whatever the approver would say."""
    ran.clear()
    asked: list[dict[str, Any]] = []

    async def approver(t: Tool, arguments: dict[str, Any]) -> Verdict:
        asked.append(arguments)
        return Approved()

    for approving in (approver, None):
        wrapped = await ApprovalToolset(TOOLS, approving).get_tool("delete_report")
        with pytest.raises(ToolArgumentsError) as invalid:
            await wrapped.invoke({"name": ["not", "a", "string"]})
        assert invalid.value.kind == "InvalidArguments"
        assert "name: Input should be a valid string" in str(invalid.value)
    assert asked == [] and ran == []


async def test_an_mcp_tools_arguments_are_checked_by_its_schema_before_anyone_is_asked() -> None:
    import mcp_types

    from tools.mcp.remote_tools import wrap_tool

    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    remote = mcp_types.Tool(name="create_directory", input_schema=schema)
    calls: list[dict[str, Any]] = []

    async def call(name: str, arguments: dict[str, Any]) -> str:
        calls.append(arguments)
        return "made"

    asked: list[dict[str, Any]] = []

    async def approver(t: Tool, arguments: dict[str, Any]) -> Verdict:
        asked.append(arguments)
        return Approved()

    made = wrap_tool(remote, "fs_", 5, "mcp fs", call)
    assert made.confirm  # says nothing: by default (approval: writes) it asks
    with pytest.raises(ToolArgumentsError):
        await made.check_arguments({"path": 7})
    wrapped = await ApprovalToolset(StaticToolset([made]), approver).get_tool("fs_create_directory")
    with pytest.raises(ToolArgumentsError) as invalid:
        await wrapped.invoke({})
    assert invalid.value.problems == [("", "'path' is a required property")]
    assert asked == [] and calls == []
    assert await wrapped.invoke({"path": "/tmp/x"}) == "made"
    assert asked == calls == [{"path": "/tmp/x"}]


class Counting:
    """An approver that counts runs: it approves, and is told when a run never started."""

    def __init__(self) -> None:
        self.given_back: list[str] = []

    async def __call__(self, t: Tool, arguments: dict[str, Any]) -> Verdict:
        return Approved()

    async def not_started(self, t: Tool) -> None:
        self.given_back.append(t.name)


class SignInNeeded(CallNotStarted):
    pass


@tool(confirm=True)
def send_report(name: str) -> str:
    """Send a report to a server that wants its caller signed in."""
    raise SignInNeeded(f"sign in to send {name}")


async def test_a_call_refused_before_it_started_gives_its_approval_back() -> None:
    """The server refused the call at the door (a 401): the approver that counted the run
    is told, so the approval still lets it run once; the refusal passes on unchanged."""
    approver = Counting()
    toolset = ApprovalToolset(StaticToolset([send_report, delete_report]), approver)
    wrapped = await toolset.get_tool("send_report")
    with pytest.raises(SignInNeeded, match="sign in to send q6"):
        await wrapped.invoke({"name": "q6"})
    assert approver.given_back == ["send_report"]
    ran.clear()
    assert await (await toolset.get_tool("delete_report")).invoke({"name": "q7"}) == "deleted q7"
    assert approver.given_back == ["send_report"]  # a call that ran gives nothing back


async def test_an_approver_without_not_started_lets_the_refusal_pass() -> None:
    async def approver(t: Tool, arguments: dict[str, Any]) -> Verdict:
        return Approved()

    wrapped = await ApprovalToolset(StaticToolset([send_report]), approver).get_tool("send_report")
    with pytest.raises(SignInNeeded):
        await wrapped.invoke({"name": "q8"})
