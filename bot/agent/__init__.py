"""The agent loop and what it reports: no Slack, no Redis."""

from bot.agent.events import (
    AgentEvent,
    Observer,
    RoundStarted,
    TextDelta,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    TurnFinished,
    fan_out,
)
from bot.agent.loop import LoopSettings, run_turn
from bot.agent.messages import repair
from bot.agent.result import CallOutcome, StopReason, ToolExecution, TurnResult

__all__ = [
    "AgentEvent",
    "CallOutcome",
    "LoopSettings",
    "Observer",
    "RoundStarted",
    "StopReason",
    "TextDelta",
    "ToolExecution",
    "ToolFinished",
    "ToolProgress",
    "ToolStarted",
    "TurnFinished",
    "TurnResult",
    "fan_out",
    "repair",
    "run_turn",
]
