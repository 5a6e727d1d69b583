"""What a running tool may know without a parameter: its call's progress reporter and
deadline (set by the loop) and who it runs for (set by the surface's toolset)."""

from __future__ import annotations

import asyncio

from bot.agent.events import AgentEvent, ToolFinished, ToolProgress
from bot.agent.execution import ExecutionSettings, execute_call
from bot.llm.response import ToolCall
from tools import StaticToolset, tool
from tools.call_context import Requester, current_call, current_requester, for_requester


@tool
async def copy_files(count: int) -> str:
    """Copies files, reporting progress."""
    scope = current_call()
    assert scope is not None
    for done in range(1, count + 1):
        await scope.progress(done, count, f"file {done}")
    requester = current_requester()
    return f"copied {count} for {requester.user if requester else 'nobody'}"


@tool(timeout=0.5)
async def wait_for_person(seconds: float) -> str:
    """Waits as if a person were being asked."""
    scope = current_call()
    assert scope is not None
    with scope.clock_stopped():
        await asyncio.sleep(seconds)
    return "answered"


async def test_progress_events_come_from_the_running_call() -> None:
    events: list[AgentEvent] = []

    async def observe(event: AgentEvent) -> None:
        events.append(event)

    toolset = for_requester(StaticToolset([copy_files]), Requester("T1", "U1"))
    execution = await execute_call(
        ToolCall("c1", "copy_files", '{"count": 2}'), toolset, ExecutionSettings(), 3, observe
    )
    assert execution.output == "copied 2 for U1"
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert progress == [
        ToolProgress(3, "c1", "copy_files", 1, 2, "file 1"),
        ToolProgress(3, "c1", "copy_files", 2, 2, "file 2"),
    ]
    assert isinstance(events[-1], ToolFinished)


async def test_the_clock_stops_while_a_person_is_asked() -> None:
    execution = await execute_call(
        ToolCall("c1", "wait_for_person", '{"seconds": 1}'),
        StaticToolset([wait_for_person]),
        ExecutionSettings(),
        1,
    )
    assert execution.ok and execution.output == "answered"
