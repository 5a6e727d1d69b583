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
    PARKED = "parked"  # calls wait for something outside the turn (a person's decision)

    @property
    def answered(self) -> bool:
        """The model gave an answer (not a stop, not a failure)."""
        return self in (StopReason.ANSWERED, StopReason.ROUND_LIMIT)


class CallOutcome(StrEnum):
    """How one tool call ended."""

    OK = "ok"  # the tool ran and returned
    FAILED = "failed"  # it failed, timed out or was refused (its error kind says which)
    CANCELLED = "cancelled"  # the turn was stopped before it finished
    INTERRUPTED = "interrupted"  # its worker died while it ran, and it was not run again
    DEFERRED = "deferred"  # it waits for something outside the turn; it runs on resume


@dataclass(frozen=True)
class ToolExecution:
    call_id: str
    name: str
    arguments: str
    outcome: CallOutcome
    output: str  # what the model read: the tool's output, or a JSON error
    duration_ms: float
    round: int
    error: str | None = None  # error kind when not ok: TimeoutError, UnknownTool, ...

    @property
    def ok(self) -> bool:
        return self.outcome is CallOutcome.OK


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
    deferred: list[ToolExecution] = field(default_factory=list)  # PARKED: the calls waiting

    @property
    def ok(self) -> bool:
        return self.stop_reason.answered
