"""The history protocol: load a thread's messages, append a finished turn's messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Message = dict[str, Any]


@dataclass(frozen=True)
class ThreadKey:
    """One conversation: a Slack thread, or a console thread."""

    team: str
    channel: str
    thread: str

    def __str__(self) -> str:
        return f"{self.team}:{self.channel}:{self.thread}"


class HistoryStore(Protocol):
    async def load(self, key: ThreadKey) -> list[Message]: ...

    async def append(self, key: ThreadKey, messages: Sequence[Message]) -> None:
        """Add one whole turn's messages at once."""
        ...


class InMemoryHistory:
    """Histories in this process only (lost on exit)."""

    def __init__(self) -> None:
        self._threads: dict[ThreadKey, list[Message]] = {}

    async def load(self, key: ThreadKey) -> list[Message]:
        return list(self._threads.get(key, ()))

    async def append(self, key: ThreadKey, messages: Sequence[Message]) -> None:
        self._threads.setdefault(key, []).extend(messages)
