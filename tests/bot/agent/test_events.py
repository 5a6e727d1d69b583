from __future__ import annotations

import pytest

from bot.agent.events import AgentEvent, RoundStarted, fan_out


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
