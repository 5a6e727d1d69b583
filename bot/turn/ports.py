"""How a turn reaches the person, as the turn's owner sees it (the Slack side implements it).

The owner holds one :class:`TurnView` per turn, as an async context: the view shows progress
while the loop runs and delivers what the turn settled on. Leaving the context only stops the
view's background work; it never writes to Slack, so an owner that lost its lock or is
handing its turn back leaves everything for the next owner to adopt from the delivery record.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.agent.events import AgentEvent
from bot.agent.result import StopReason
from bot.turn.model import Turn
from bot.turn.store.approvals import ApprovalRequest
from bot.turn.store.notices import Notice

DeliveryRecord = dict[str, Any]  # what the view saved about what Slack shows (opaque here)

GAVE_UP = (
    "Sorry, I could not answer this message: something kept failing on my side. "
    "Please try again in a few minutes."
)
NOT_DELIVERED = (
    "Sorry, I could not post my answer to this message: Slack did not take it for too long. "
    "Please ask again."
)


@dataclass(frozen=True)
class Settled:
    """What a settled turn shows the person: the text, how the loop ended, and the turn's
    messages (its tool results say how each tool call ended)."""

    text: str
    reason: StopReason
    messages: list[dict[str, Any]] = field(default_factory=list)

    def tool_results(self) -> dict[str, str]:
        return {
            str(m.get("tool_call_id")): str(m.get("content") or "")
            for m in self.messages
            if m.get("role") == "tool"
        }


class Aborted(Exception):
    """The owner lost its lease or hands the turn back: stop now, write nothing more."""


class DeliveryFailed(Exception):
    """Slack did not take it this time (5xx, connection, rate limit beyond the retries):
    try again later."""


class Undeliverable(Exception):
    """Slack will never take it (the channel is gone, the bot was removed, ...)."""


class Deadline(Protocol):
    """How long an owner may still speak for a turn (its lease, bot/turn/store/lease.py)."""

    def time_left(self) -> float:
        """Seconds a call made for the turn may still take (0: none may be started)."""
        ...

    def bounded(self, what: str) -> AbstractAsyncContextManager[None]:
        """Run one Slack call, or one Redis step on the way to one: :class:`Aborted` at once
        when there is no time left for it, and when it is still running at the deadline."""
        ...


class Fence(Deadline, Protocol):
    def valid(self) -> bool:
        """Whether this owner may still write to Slack (its lease holds), without a round
        trip."""
        ...

    async def save_delivery(self, record: DeliveryRecord) -> None:
        """Store the delivery record, fenced by the lock (raises when the lease is lost)."""
        ...


class TurnView(Protocol):
    async def observe(self, event: AgentEvent) -> None:
        """The loop's observer: only records and schedules, never waits on Slack."""
        ...

    async def deliver(self, settled: Settled) -> None:
        """Make the thread show the settled text exactly once, finishing whatever is open
        (the progress message shows how every tool call ended). Idempotent
        across attempts through the delivery record. Raises :class:`DeliveryFailed` or
        :class:`Undeliverable`."""
        ...

    async def park(self, requests: list[ApprovalRequest]) -> None:
        """The turn waits for people to decide ``requests``: close what it shows so far
        (no stream left open) and show what it waits for, once (idempotent across attempts
        through the delivery record). Raises like :meth:`deliver`."""
        ...

    def delivery(self) -> DeliveryRecord:
        """The delivery record as it is now (for a notice that must clean up after it)."""
        ...


class Responder(Protocol):
    def view(
        self, turn: Turn, entry_id: str, delivery: DeliveryRecord, fence: Fence
    ) -> AbstractAsyncContextManager[TurnView]:
        """The view of one turn, picking up from what an earlier attempt recorded."""
        ...

    async def post_notice(self, notice: Notice, deadline: Deadline) -> None:
        """Post a notice (and close what its turn left open), every call within the
        thread's lease (``deadline``). Raises like ``deliver``, and :class:`Aborted`."""
        ...
