"""The history protocol: a thread's stored turns, and appending one finished turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Message = dict[str, Any]
TurnMessages = list[Message]


@dataclass(frozen=True)
class ThreadKey:
    """One conversation: a Slack thread, or a console thread."""

    team: str
    channel: str
    thread: str

    def __str__(self) -> str:
        return f"{self.team}:{self.channel}:{self.thread}"


class HistoryStore(Protocol):
    async def load_turns(self, key: ThreadKey) -> list[TurnMessages]:
        """Every stored turn, oldest first; each a complete list of OpenAI messages."""
        ...

    async def append(self, key: ThreadKey, messages: Sequence[Message]) -> None:
        """Store one whole turn's messages at once (all or nothing)."""
        ...
