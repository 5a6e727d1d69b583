"""What the loop tells its observer while a turn runs: tiny, typed, immutable events."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.agent.result import CallOutcome, TurnResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundStarted:
    round: int


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's text. Text in a round that then calls tools is commentary;
    the answer is the text of the round that calls none."""

    round: int
    text: str


@dataclass(frozen=True)
class ToolStarted:
    round: int
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolProgress:
    """How far a running tool is, as it reports it (MCP progress notifications)."""

    round: int
    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None

    @property
    def amount(self) -> str:
        """How far, in numbers only: the percentage (with a total), else the count done."""
        if self.total and self.total > 0:
            return f"{100 * self.progress / self.total:.0f} %"
        return f"{self.progress:g} done"

    @property
    def text(self) -> str:
        """The percentage (with a total) and the message, joined by an en dash."""
        amount = self.amount if (self.total and self.total > 0) or not self.message else ""
        return " – ".join(part for part in (amount, self.message or "") if part)


@dataclass(frozen=True)
class ToolFinished:
    round: int
    call_id: str
    name: str
    outcome: CallOutcome
    duration_ms: float
    preview: str
    error: str | None = None  # the error kind, e.g. "TimeoutError", when not ok

    @property
    def ok(self) -> bool:
        return self.outcome is CallOutcome.OK


@dataclass(frozen=True)
class TurnFinished:
    result: TurnResult


AgentEvent = RoundStarted | TextDelta | ToolStarted | ToolProgress | ToolFinished | TurnFinished
Observer = Callable[[AgentEvent], Awaitable[None]]


async def notify(observer: Observer | None, event: AgentEvent) -> None:
    """Deliver ``event``; an observer that raises is logged and ignored.

    Observers are awaited in line, so they must be quick: the Slack observer only records
    state and lets a background task coalesce edits.
    """
    if observer is None:
        return
    try:
        await observer(event)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("observer failed on %s; the turn goes on", type(event).__name__)


def fan_out(*observers: Observer | None) -> Observer:
    """One observer that delivers each event to several, each isolated from the others."""
    present = [o for o in observers if o is not None]

    async def deliver(event: AgentEvent) -> None:
        for observer in present:
            await notify(observer, event)

    return deliver
