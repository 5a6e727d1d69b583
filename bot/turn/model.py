"""A turn: one message from a person that the bot must answer, as it travels the queue.

Its JSON form is the queue's wire format and stays as it was when the turn carried an
``extra`` dict (``extra.message``, ``extra.new_thread``, ``extra.shared``), so replicas of
either version read each other's entries during a rolling deploy.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.state.redis.thread_key import ThreadKey
from bot.turn.message import SlackMessage

log = logging.getLogger(__name__)


class TurnKind(StrEnum):
    """How the message reached the bot."""

    MENTION = "mention"  # an @mention in a channel
    DM = "dm"  # a direct message
    FOLLOWUP = "followup"  # a reply without a mention in a channel thread the bot is in
    ASSISTANT = "assistant"  # Slack's agent pane
    SCHEDULED = "scheduled"  # a schedule's run (bot/schedules/firing.py), under its headline

    @property
    def in_channel(self) -> bool:
        """Said in a channel thread, where several people talk."""
        return self in (TurnKind.MENTION, TurnKind.FOLLOWUP)


@dataclass(frozen=True)
class Turn:
    team: str
    channel: str
    thread_ts: str  # the thread's root ts: the conversation
    user: str
    text: str
    message_ts: str = ""  # this message's own ts (dedup of message + app_mention)
    event_id: str = ""  # Slack's event id (dedup of retries)
    kind: TurnKind = TurnKind.MENTION
    received_at: float = field(default_factory=time.time)
    # The message whole (files, forwards, its author's workspace); None for turns queued
    # before messages were carried whole, and for the console.
    message: SlackMessage | None = None
    new_thread: bool = False  # the bot had not joined this thread before this message
    # The W3C trace context of the ingress span ("" when not traced; entries queued before
    # it existed load without it), so the worker's spans join the turn's trace.
    traceparent: str = ""
    # Whether the channel is shared with another organisation (Slack Connect), as the event
    # said it (the envelope's ``is_ext_shared_channel``); None when it did not say (the
    # console, turns queued before it was carried): then Slack is asked (bot/slack/inbox).
    shared: bool | None = None

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

    @property
    def author_team(self) -> str:
        """The workspace of the turn's author as the event named it (Slack Connect: maybe
        not the bot's); "" when it named none, never assumed to be the bot's. A schedule's
        run is its owner's, of this workspace: only such a person can make one
        (bot/schedules/tool.py), and the roles ask users.info again all the same."""
        if self.kind is TurnKind.SCHEDULED:
            return self.team
        return self.message.user_team if self.message else ""

    def to_json(self) -> str:
        extra: dict[str, Any] = {"new_thread": self.new_thread}
        if self.message is not None:
            extra["message"] = self.message.to_dict()
        if self.shared is not None:
            extra["shared"] = self.shared
        data = {
            "team": self.team,
            "channel": self.channel,
            "thread_ts": self.thread_ts,
            "user": self.user,
            "text": self.text,
            "message_ts": self.message_ts,
            "event_id": self.event_id,
            "kind": self.kind.value,
            "received_at": self.received_at,
            "extra": extra,
            "traceparent": self.traceparent,
        }
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Turn:
        data = json.loads(text)
        extra = data.get("extra") or {}
        return cls(
            team=str(data["team"]),
            channel=str(data["channel"]),
            thread_ts=str(data["thread_ts"]),
            user=str(data["user"]),
            text=str(data["text"]),
            message_ts=str(data.get("message_ts") or ""),
            event_id=str(data.get("event_id") or ""),
            kind=_kind(data.get("kind")),
            received_at=float(data.get("received_at") or time.time()),
            message=_message(extra.get("message") if isinstance(extra, dict) else None),
            new_thread=bool(extra.get("new_thread")) if isinstance(extra, dict) else False,
            traceparent=str(data.get("traceparent") or ""),
            shared=_shared(extra.get("shared") if isinstance(extra, dict) else None),
        )


def _kind(value: Any) -> TurnKind:
    try:
        return TurnKind(value)
    except ValueError:
        return TurnKind.MENTION


def _shared(value: Any) -> bool | None:
    """The carried ``shared`` flag; None when absent or not a boolean."""
    return value if isinstance(value, bool) else None


def _message(data: Any) -> SlackMessage | None:
    """The carried message, or None when there is none or it cannot be read (the turn is
    then answered from its text)."""
    if not isinstance(data, dict):
        return None
    try:
        return SlackMessage.from_dict(data)
    except (TypeError, ValueError, AttributeError):
        log.warning("a queued turn carries a message that cannot be read; using its text")
        return None


@dataclass(frozen=True)
class QueuedTurn:
    """A turn as the queue holds it: its entry id, which names the turn everywhere (its
    record, journal, approvals, tags in Slack, spans), and the turn."""

    entry_id: str
    turn: Turn


@dataclass(frozen=True)
class Unreadable:
    """A queue entry whose payload cannot be read: dead-lettered when it is met."""

    entry_id: str


Entry = QueuedTurn | Unreadable  # what a read of the queue gives
