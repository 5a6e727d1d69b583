"""The delivery record: what Slack shows of a turn, as two small state machines.

The turn's message (its task cards, then the answer's first part)::

    none ─► posting ─┬─► streaming ─┬─► posted ─► finished
      ▲        │     │              ├─► stopped ─► finished
      │        │     │              └──────────► finished
      │        │     └─► posted ─────────────► finished
      └────────┴─ nothing found;   posted, streaming ─► none: the message was deleted;
                                   posted, streaming, stopped ─► none: set aside (parked)

When the turn parks (a call waits for a person's approval), its message so far is closed
where it is and set aside (``earlier``), the approval card is posted below it (``cards``),
and the answer continues in a new message: the next *segment*, whose tags carry its number
so a message of an earlier segment is never taken for it. A message set aside with a call
waiting on it is kept with what it shows (``aside``: its text, its task cards, its
segment), so its waiting cards can be brought to how the calls ended (``aside.py``).

``posting`` is written before a call that creates the message (a post or a stream start),
its ts after: a turn resumed anywhere that finds ``posting`` without a ts looks in the
thread before posting again. ``stopped``: the person stopped the stream in Slack; it is
never written to again. The answer's later parts are recorded the same way, one at a time.

The Stop button's own message (a stream with no agent session)::

    none ─► posting ─► shown ─► closed        posting ─► none (nothing found), none ─► closed

The record is written only through its methods, which refuse a move the tables do not
allow (:class:`IllegalDeliveryMove`) and make a move to where the record is already a
no-op. Its stored form keeps the flat fields of earlier versions (``first_ts``,
``first_posting``, ...), so replicas of either version continue each other's deliveries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class MessageState(StrEnum):
    NONE = "none"  # nothing created yet
    POSTING = "posting"  # a post or a stream start was sent; its ts may not be known
    STREAMING = "streaming"  # a stream that may still be open
    POSTED = "posted"  # an ordinary message, or a stream that is over
    STOPPED = "stopped"  # the person stopped its stream: never written to again
    FINISHED = "finished"  # it shows the answer's first part


class ControlState(StrEnum):
    NONE = "none"
    POSTING = "posting"  # it was posted; its ts may not be known
    SHOWN = "shown"
    CLOSED = "closed"  # gone: the turn is over


MESSAGE_MOVES: dict[MessageState, frozenset[MessageState]] = {
    MessageState.NONE: frozenset({MessageState.POSTING}),
    MessageState.POSTING: frozenset(
        {MessageState.NONE, MessageState.STREAMING, MessageState.POSTED}
    ),
    MessageState.STREAMING: frozenset(
        {MessageState.POSTED, MessageState.STOPPED, MessageState.FINISHED, MessageState.NONE}
    ),
    MessageState.POSTED: frozenset({MessageState.NONE, MessageState.FINISHED}),
    MessageState.STOPPED: frozenset({MessageState.FINISHED, MessageState.NONE}),
    MessageState.FINISHED: frozenset(),
}
CONTROL_MOVES: dict[ControlState, frozenset[ControlState]] = {
    ControlState.NONE: frozenset({ControlState.POSTING, ControlState.CLOSED}),
    ControlState.POSTING: frozenset({ControlState.NONE, ControlState.SHOWN}),
    ControlState.SHOWN: frozenset({ControlState.CLOSED}),
    ControlState.CLOSED: frozenset(),
}
NO_PART = -1


class IllegalDeliveryMove(Exception):
    """A move the delivery record's tables do not allow: a bug, never a Slack failure."""


@dataclass
class SlackDelivery:
    message: MessageState = MessageState.NONE
    ts: str = ""  # the turn's message, once known
    control: ControlState = ControlState.NONE
    control_ts: str = ""  # the Stop button's own message, once known
    tasks: list[dict[str, Any]] = field(default_factory=list)  # the tool calls shown
    parts: dict[str, str] = field(default_factory=dict)  # part number -> ts, once final
    posting_part: int = NO_PART  # a later part was sent; its ts may not be known
    segment: int = 0  # how many times the turn parked: the turn's message of this segment
    earlier: list[str] = field(default_factory=list)  # messages set aside when it parked
    cards: dict[str, str] = field(default_factory=dict)  # approval card key -> ts
    card_posting: str = ""  # the key of a card sent whose ts may not be known
    # A message set aside with calls waiting on it: ts -> {"text", "tasks", "segment"}
    aside: dict[str, dict[str, Any]] = field(default_factory=dict)

    # --- the turn's message --------------------------------------------------------------

    def posting(self) -> None:
        """A post or a stream start goes out now."""
        self._move(MessageState.POSTING)

    def created(self, ts: str, *, streaming: bool) -> None:
        """The post or stream start returned ``ts``."""
        self._move(MessageState.STREAMING if streaming else MessageState.POSTED, ts)

    def found(self, ts: str, *, streaming: bool) -> None:
        """Looked in the thread for a message whose creation had an unknown outcome: ``ts``
        ("" when there is none; then it may be posted again)."""
        if not ts:
            self._move(MessageState.NONE, "")
        else:
            self.created(ts, streaming=streaming)

    def stream_over(self) -> None:
        """The stream was ended (or cannot be written any more): an ordinary message now."""
        if self.message is MessageState.STREAMING:
            self._move(MessageState.POSTED)

    def user_stopped(self) -> bool:
        """The person stopped the stream; False when there is no stream to leave as it is."""
        if self.message in (MessageState.STREAMING, MessageState.STOPPED):
            self._move(MessageState.STOPPED)
            return True
        return False

    def gone(self) -> None:
        """The message was deleted: the answer is posted anew."""
        self._move(MessageState.NONE, "")

    def finished(self, ts: str) -> None:
        """``ts`` shows the answer's first part."""
        self._move(MessageState.FINISHED, ts)
        self.parts["0"] = ts

    def set_aside(self, shown: dict[str, Any] | None = None) -> None:
        """The turn parks: its message so far stays where it is, closed (``shown``: what it
        shows, kept while calls on it wait); the next segment starts with no message, no
        cards and no Stop button's message of its own."""
        if self.ts:
            self._move(MessageState.NONE)
            self.earlier.append(self.ts)
            if shown is not None:
                self.aside[self.ts] = shown
        self.ts, self.tasks, self.parts, self.posting_part = "", [], {}, NO_PART
        self.control, self.control_ts = ControlState.NONE, ""
        self.segment += 1

    @property
    def after(self) -> str:
        """The ts the turn's message of this segment comes after (its last card)."""
        shown = [*self.earlier, *self.cards.values()]
        return max(shown, key=float) if shown else ""

    @property
    def stopped(self) -> bool:
        return self.message is MessageState.STOPPED

    @property
    def unknown(self) -> bool:
        """A creation went out whose ts was never learnt."""
        return self.message is MessageState.POSTING

    @property
    def open_stream(self) -> str:
        """The ts of a stream that may still be open and may be ended, else ""."""
        return self.ts if self.message is MessageState.STREAMING else ""

    def _move(self, target: MessageState, ts: str | None = None) -> None:
        if target is not self.message and target not in MESSAGE_MOVES[self.message]:
            raise IllegalDeliveryMove(f"the turn's message: {self.message} -> {target}")
        self.message = target
        if ts is not None:
            self.ts = ts

    # --- the answer's later parts ----------------------------------------------------------

    def part_ts(self, number: int) -> str:
        return self.parts.get(str(number), "")

    def part_posting(self, number: int) -> None:
        """Part ``number`` goes out now."""
        self.posting_part = number

    def part_posted(self, number: int, ts: str) -> None:
        self.parts[str(number)], self.posting_part = ts, NO_PART

    # --- the Stop button's message --------------------------------------------------------

    def control_posting(self) -> None:
        self._move_control(ControlState.POSTING)

    def control_shown(self, ts: str) -> None:
        self._move_control(ControlState.SHOWN, ts)

    def control_not_found(self) -> None:
        self._move_control(ControlState.NONE, "")

    def control_closed(self) -> None:
        self._move_control(ControlState.CLOSED)

    def _move_control(self, target: ControlState, ts: str | None = None) -> None:
        if target is not self.control and target not in CONTROL_MOVES[self.control]:
            raise IllegalDeliveryMove(f"the Stop button's message: {self.control} -> {target}")
        self.control = target
        if ts is not None:
            self.control_ts = ts

    # --- the stored form -------------------------------------------------------------------

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> SlackDelivery:
        """From the stored fields (also as earlier versions wrote them)."""
        parts = data.get("parts")
        tasks = data.get("tasks")
        # A record that went through Lua's cjson has its empty objects and lists alike.
        earlier, cards, aside = data.get("earlier"), data.get("cards"), data.get("aside")
        record = cls(
            tasks=list(tasks) if isinstance(tasks, list) else [],
            parts=dict(parts) if isinstance(parts, dict) else {},
            posting_part=int(data.get("posting_part", NO_PART)),
            segment=int(data.get("segment", 0)),
            earlier=list(earlier) if isinstance(earlier, list) else [],
            cards=dict(cards) if isinstance(cards, dict) else {},
            card_posting=str(data.get("card_posting") or ""),
            aside=dict(aside) if isinstance(aside, dict) else {},
        )
        ts = str(data.get("first_ts") or "")
        if record.part_ts(0):
            record.message, record.ts = MessageState.FINISHED, record.part_ts(0)
        elif ts and data.get("stopped_by_user"):
            record.message, record.ts = MessageState.STOPPED, ts
        elif ts:
            streaming = bool(data.get("first_streaming"))
            record.message = MessageState.STREAMING if streaming else MessageState.POSTED
            record.ts = ts
        elif data.get("first_posting"):
            record.message = MessageState.POSTING
        control_ts = str(data.get("control_ts") or "")
        if data.get("control_closed"):
            record.control, record.control_ts = ControlState.CLOSED, control_ts
        elif control_ts:
            record.control, record.control_ts = ControlState.SHOWN, control_ts
        elif data.get("control_posting"):
            record.control = ControlState.POSTING
        return record

    def to_record(self) -> dict[str, Any]:
        message, control = self.message, self.control
        return {
            "first_ts": self.ts,
            "first_streaming": message in (MessageState.STREAMING, MessageState.STOPPED),
            "first_posting": message is MessageState.POSTING,
            "stopped_by_user": message is MessageState.STOPPED,
            "tasks": self.tasks,
            "parts": self.parts,
            "posting_part": self.posting_part,
            "control_ts": self.control_ts,
            "control_posting": control is ControlState.POSTING,
            "control_closed": control is ControlState.CLOSED,
            "segment": self.segment,
            "earlier": self.earlier,
            "cards": self.cards,
            "card_posting": self.card_posting,
            "aside": self.aside,
        }
