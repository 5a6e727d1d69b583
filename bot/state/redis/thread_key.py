"""The conversation a record belongs to: the key's part that names a thread."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ThreadKey:
    """One conversation: a Slack thread, or a console thread."""

    team: str
    channel: str
    thread: str

    def __str__(self) -> str:
        return f"{self.team}:{self.channel}:{self.thread}"
