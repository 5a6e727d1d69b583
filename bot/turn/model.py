"""A turn: one message from a person that the bot must answer, as it travels the queue."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ThreadKey:
    """One conversation: a Slack thread, or a console thread."""

    team: str
    channel: str
    thread: str

    def __str__(self) -> str:
        return f"{self.team}:{self.channel}:{self.thread}"


@dataclass(frozen=True)
class Turn:
    team: str
    channel: str
    thread_ts: str  # the thread's root ts: the conversation
    user: str
    text: str
    message_ts: str = ""  # this message's own ts (dedup of message + app_mention)
    event_id: str = ""  # Slack's event id (dedup of retries)
    kind: str = "mention"  # mention, dm, followup, assistant, console
    received_at: float = field(default_factory=time.time)
    extra: dict[str, Any] = field(default_factory=dict)
    # The W3C trace context of the ingress span ("" when not traced; entries queued before
    # it existed load without it), so the worker's spans join the turn's trace.
    traceparent: str = ""

    @property
    def order(self) -> float:
        """Where the message sits in its thread: its Slack ts (to the microsecond, which a
        float keeps apart), or when it arrived for a turn without one."""
        try:
            return float(self.message_ts)
        except ValueError:
            return self.received_at

    @property
    def thread_key(self) -> ThreadKey:
        return ThreadKey(self.team, self.channel, self.thread_ts)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Turn:
        data = json.loads(text)
        known = {name for name in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})
