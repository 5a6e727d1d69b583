"""What a queued turn asks of the surface it answers on (Slack; the tests' in-memory one), as
the turn's owner sees it.

- the :class:`Agent`: the model and the loop's settings, and per turn what its channel sets
  (read once, and given to what follows), its tools, what the surface knows, the person's
  message (:class:`TurnInput`) and the model to call;
- the :class:`Responder`: how the turn reaches the person, one :class:`TurnView` per turn,
  written through the owner's :class:`Fence`, and the notices owed to people;
- the :class:`WaitingNote`: the note a thread gets when its later messages wait behind a
  turn waiting for an approval;
- :data:`TurnEnded`: told when a turn ended, for what the surface keeps about it.

The owner holds one :class:`TurnView` per turn, as an async context: the view shows progress
while the loop runs and delivers what the turn settled on. Leaving the context only stops the
view's background work; it never writes to Slack, so an owner that lost its lock or is
handing its turn back leaves everything for the next owner to adopt from the delivery record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.agent.events import AgentEvent
from bot.agent.loop import LoopSettings
from bot.agent.messages import user_message
from bot.agent.result import StopReason
from bot.channels.reader import ChannelView
from bot.llm.model import ChatModel
from bot.llm.tokens import TokenEstimator
from bot.turn.model import QueuedTurn, Turn
from bot.turn.outcome import Delivery
from bot.turn.store.approvals import ApprovalRequest
from bot.turn.store.notices import Notice
from tools.toolset import Toolset

DeliveryRecord = dict[str, Any]  # what the view saved about what Slack shows (opaque here)


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
        self, queued: QueuedTurn, delivery: DeliveryRecord, fence: Fence
    ) -> AbstractAsyncContextManager[TurnView]:
        """The view of one turn, picking up from what an earlier attempt recorded."""
        ...

    async def post_notice(self, notice: Notice, deadline: Deadline) -> None:
        """Post a notice (and close what its turn left open), every call within the
        thread's lease (``deadline``). Raises like ``deliver``, and :class:`Aborted`."""
        ...


# Told once an attempt ended its turn (delivered, or dead-lettered), after its last move: a
# surface's bookkeeping (a scheduled run's outcome on its schedule). Best effort: a worker
# that dies between the move and this call skips it.
TurnEnded = Callable[[QueuedTurn, Delivery], Awaitable[None]]


class WaitingNote(Protocol):
    async def tell(
        self, requests: list[ApprovalRequest], wait: str, deadline: Deadline, *, look_first: bool
    ) -> None:
        """Post in the thread of ``requests`` (the open requests of one card) that the thread
        waits for a decision on that card: a link to it and who may decide; tagged with
        ``wait``. ``look_first``: an earlier owner may have posted it (found by its tag, it is
        not posted again). Every call within ``deadline``; raises like ``deliver``, and
        :class:`Aborted`."""
        ...


# --- the agent: what running a turn needs besides its state ---------------------------


@dataclass(frozen=True)
class TurnInput:
    """What the model is given for a turn: the user message (journaled and kept in history)
    and messages shown with it for this turn only, never stored (pictures)."""

    message: dict[str, Any]
    attachments: list[dict[str, Any]] = field(default_factory=list)


# What the turn's channel sets (its settings and notes, bot/channels), read once a turn and
# given to the three that follow; None: the surface has no channel settings.
ChannelFor = Callable[[Turn], Awaitable[ChannelView | None]]
# The queued turn and its owner's lease (what the tools say in Slack, a question an MCP
# server asks, is said within it).
ToolsetFor = Callable[[QueuedTurn, Deadline, ChannelView | None], Awaitable[Toolset]]
ContextFor = Callable[[Turn, ChannelView | None], Awaitable[str]]
MessageFor = Callable[[Turn], Awaitable[TurnInput]]
ModelFor = Callable[[Turn, ChannelView | None], Awaitable[ChatModel]]


async def no_channel(turn: Turn) -> ChannelView | None:
    return None


async def no_context(turn: Turn, channel: ChannelView | None) -> str:
    return ""


async def plain_message(turn: Turn) -> TurnInput:
    return TurnInput(user_message(turn.text))


@dataclass
class Agent:
    model: ChatModel
    settings: LoopSettings
    # The tools this turn's person may use, wrapped by policy; also what decides which
    # results in the thread's history they may see (permissions/withholding.py).
    toolset_for: ToolsetFor
    history_budget: int
    estimator: TokenEstimator
    context_for: ContextFor = no_context  # what the surface knows (the channel in view)
    message_for: MessageFor = plain_message  # the user message (with files, the thread...)
    models: ModelFor | None = None  # the model for a turn (its person's limits); None: model
    channel_for: ChannelFor = no_channel  # the channel's settings and notes, once a turn

    async def model_for(self, turn: Turn, channel: ChannelView | None) -> ChatModel:
        """The model this turn calls."""
        return self.model if self.models is None else await self.models(turn, channel)
