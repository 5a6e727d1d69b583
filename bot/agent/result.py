"""What a turn produces: a small closed set of stop reasons and a plain result object."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.llm.usage import Usage


class StopReason(StrEnum):
    ANSWERED = "answered"  # the model answered without asking for more tools
    ROUND_LIMIT = "round_limit"  # max_rounds reached; a last call without tools answered
    CANCELLED = "cancelled"  # stopped from outside (a Stop button)
    FAILED = "failed"  # the model service failed after the SDK's retries


@dataclass(frozen=True)
class ToolExecution:
    call_id: str
    name: str
    arguments: str
    ok: bool
    output: str  # what the model read: the tool's output, or a JSON error
    duration_ms: float
    round: int
    error: str | None = None  # error kind when not ok: TimeoutError, UnknownTool, ...


@dataclass(frozen=True)
class TurnResult:
    text: str  # the answer; for failed or cancelled turns, plain words for a person
    stop_reason: StopReason
    rounds: int  # model calls made
    executions: list[ToolExecution] = field(default_factory=list)
    new_messages: list[dict[str, Any]] = field(default_factory=list)  # to store in history
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    error_detail: str | None = None  # for the log only, never shown to people

    @property
    def ok(self) -> bool:
        return self.stop_reason in (StopReason.ANSWERED, StopReason.ROUND_LIMIT)
