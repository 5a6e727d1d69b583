"""What a person deciding on a call reads of it besides its arguments, as its tool puts it:
facts in plain words (shown as text, never as formatting) and moments (each reader sees them
in their own time zone). A tool that has one (``Tool.preview``) is asked for it when a call
needs approval, after its arguments passed the tool's check; the approval card shows it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallPreview:
    """``facts``: (label, value) pairs in words; ``times``: epoch seconds, shown after
    ``times_label``."""

    facts: tuple[tuple[str, str], ...] = ()
    times_label: str = ""
    times: tuple[float, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {
                "facts": [list(f) for f in self.facts],
                "label": self.times_label,
                "times": self.times,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> CallPreview | None:
        """The preview stored as :meth:`to_json` wrote it; None for "" or what does not
        read as one."""
        if not text:
            return None
        try:
            data = json.loads(text)
            facts = tuple((str(label), str(value)) for label, value in data.get("facts") or ())
            times = tuple(float(t) for t in data.get("times") or ())
            return cls(facts, str(data.get("label") or ""), times)
        except (ValueError, TypeError, AttributeError):
            return None


# Given a call's arguments (already checked), what the card shows of it.
ArgumentsPreview = Callable[[dict[str, Any]], Awaitable[CallPreview]]
