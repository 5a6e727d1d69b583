"""How a worker reaches the person: progress while a turn runs, then the answer."""

from __future__ import annotations

from typing import Protocol

from bot.agent.events import Observer
from bot.agent.result import TurnResult
from bot.turn import Turn

GAVE_UP = (
    "Sorry, I could not answer this message: something kept failing on my side. "
    "Please try again in a few minutes."
)


class Responder(Protocol):
    def observer(self, turn: Turn) -> Observer | None:
        """Receives the loop's events while the turn runs (progress, streamed text)."""
        ...

    async def deliver(self, turn: Turn, text: str, result: TurnResult | None) -> None:
        """Post the answer. ``result`` is None when a finished turn is delivered again after a
        crash (only its stored text is known then)."""
        ...

    async def give_up(self, turn: Turn, text: str) -> None:
        """Tell the person, in plain words, that their message could not be answered."""
        ...
