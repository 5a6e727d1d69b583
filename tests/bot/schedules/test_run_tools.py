"""A scheduled run's tools (bot/schedules/run_tools.py): its owner's, without ``schedule``:
not listed, and a call of it by name refused with words the model can relay; every other
tool as the inner toolset has it."""

from __future__ import annotations

import pytest

from bot.schedules.run_tools import IN_A_RUN, IN_THE_CONSOLE, WithoutScheduling
from tools.definition import Tool
from tools.errors import ToolUnavailable
from tools.toolset import StaticToolset


def tool(name: str) -> Tool:
    async def invoke(arguments: dict[str, object]) -> str:
        return name

    return Tool(name=name, description=name, parameters={"type": "object"}, invoke=invoke)


async def test_the_schedule_tool_is_neither_offered_nor_run() -> None:
    inner = StaticToolset([tool("get_time"), tool("schedule"), tool("remember")])
    run = WithoutScheduling(inner)
    assert [t.name for t in await run.list_tools()] == ["get_time", "remember"]
    assert (await run.get_tool("get_time")).name == "get_time"
    with pytest.raises(ToolUnavailable) as refused:
        await run.get_tool("schedule")
    assert refused.value.kind == "ToolNotAllowed"
    assert str(refused.value) == (
        "The tool 'schedule' is not available here. A scheduled run cannot make schedules: "
        "ask in a conversation."
    )
    assert IN_A_RUN in str(refused.value)
    with pytest.raises(ToolUnavailable) as unknown:
        await run.get_tool("nothing")
    assert unknown.value.kind == "UnknownTool"  # as the inner toolset says


async def test_the_console_says_why_in_its_own_words() -> None:
    console = WithoutScheduling(StaticToolset([tool("get_time"), tool("schedule")]), IN_THE_CONSOLE)
    assert [t.name for t in await console.list_tools()] == ["get_time"]
    with pytest.raises(ToolUnavailable) as refused:
        await console.get_tool("schedule")
    assert IN_THE_CONSOLE in str(refused.value) and IN_A_RUN not in str(refused.value)
