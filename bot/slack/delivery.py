"""The delivery record: what Slack shows of a turn, written before and after each Slack call
that creates a message, so a turn resumed anywhere continues it and never posts twice."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class SlackDelivery:
    progress_ts: str = ""  # the progress message (with its Stop button while the turn runs)
    progress_posting: bool = False  # a progress post was sent; its ts may not be known
    progress_closed: bool = False  # its final form is written: no Stop button any more
    progress_lines: list[dict[str, Any]] = field(default_factory=list)  # tool rows shown
    first_ts: str = ""  # the message holding the answer's first part: a stream or a post
    first_streaming: bool = False  # first_ts is a stream that may still be open
    first_posting: bool = False  # a stream start or post was sent; its ts may not be known
    parts: dict[str, str] = field(default_factory=dict)  # part number -> ts, once final
    posting_part: int = -1  # a later part was sent; its ts may not be known

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> SlackDelivery:
        known = {f.name for f in fields(cls)}
        record = cls(**{k: v for k, v in data.items() if k in known})
        # A record that went through Lua's cjson has its empty objects and lists alike.
        if not isinstance(record.parts, dict):
            record.parts = {}
        if not isinstance(record.progress_lines, list):
            record.progress_lines = []
        return record

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    def part_ts(self, number: int) -> str:
        return self.parts.get(str(number), "")
