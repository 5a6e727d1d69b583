"""What an attempt at a turn comes to (a closed union), and what its delivery comes to."""

from __future__ import annotations

from dataclasses import dataclass

from bot.agent.result import StopReason

# What the person is told when their turn is given up (its notice).
GAVE_UP = (
    "Sorry, I could not answer this message: something kept failing on my side. "
    "Please try again in a few minutes."
)
NOT_DELIVERED = (
    "Sorry, I could not post my answer to this message: Slack did not take it for too long. "
    "Please ask again."
)


@dataclass(frozen=True)
class Delivered:
    """Slack shows the turn; its history is written. ``reason``: how its loop ended (None:
    an earlier build left it delivered, and did not say)."""

    reason: StopReason | None = None


@dataclass(frozen=True)
class DeadLettered:
    """The turn was given up (Slack will never take it, or refused it for too long)."""

    reason: str


@dataclass(frozen=True)
class Waiting:
    """The turn is parked until a person decides: the thread waits behind it, and nobody
    works on it until then."""


Delivery = Delivered | DeadLettered
TurnEnd = Delivered | DeadLettered | Waiting  # what an attempt at a turn came to
