from __future__ import annotations

import pytest

from bot.agent.events import AgentEvent, RoundStarted, ToolProgress, fan_out


async def test_fan_out_isolates_a_failing_observer(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[AgentEvent] = []

    async def broken(event: AgentEvent) -> None:
        raise RuntimeError("bug")

    async def good(event: AgentEvent) -> None:
        seen.append(event)

    deliver = fan_out(broken, None, good)
    await deliver(RoundStarted(1))
    assert seen == [RoundStarted(1)]
    assert "observer failed on RoundStarted" in caplog.text


def test_tool_progress_reads_as_a_percentage_and_a_message() -> None:
    assert ToolProgress(1, "c", "t", 2, 5, "counting aisle 2").text == "40 % – counting aisle 2"
    assert ToolProgress(1, "c", "t", 30, 100).text == "30 %"
    assert ToolProgress(1, "c", "t", 3, None, "third file").text == "third file"
    assert ToolProgress(1, "c", "t", 3).text == "3 done"
