"""The delivery record: what Slack shows of a turn, written before and after each Slack call
that creates a message, so a turn resumed anywhere continues it and never posts twice."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class SlackDelivery:
    first_ts: str = ""  # the turn's message (tools, then the answer's first part)
    first_streaming: bool = False  # first_ts is a stream that may still be open
    first_posting: bool = False  # a stream start or post was sent; its ts may not be known
    stopped_by_user: bool = False  # the person stopped the stream: never write into it again
    tasks: list[dict[str, Any]] = field(default_factory=list)  # the tool calls shown
    parts: dict[str, str] = field(default_factory=dict)  # part number -> ts, once final
    posting_part: int = -1  # a later part was sent; its ts may not be known
    control_ts: str = ""  # the Stop button's own message (streaming, no agent session)
    control_posting: bool = False  # it was posted; its ts may not be known
    control_closed: bool = False  # it is gone (the turn is over)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> SlackDelivery:
        known = {f.name for f in fields(cls)}
        record = cls(**{k: v for k, v in data.items() if k in known})
        # A record that went through Lua's cjson has its empty objects and lists alike.
        if not isinstance(record.parts, dict):
            record.parts = {}
        if not isinstance(record.tasks, list):
            record.tasks = []
        return record

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    def part_ts(self, number: int) -> str:
        return self.parts.get(str(number), "")
