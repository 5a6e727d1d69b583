"""A person's approval as a wrapper toolset: asked before the call runs, with the call's
clock stopped while they think; without anyone to ask, the call is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tools import ApprovalToolset, StaticToolset, Tool, tool
from tools.approval import Approved, Refused, Verdict
from tools.call_context import CallScope, calling
from tools.errors import NotApproved

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
