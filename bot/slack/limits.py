"""Keeping what the bot shows inside Slack's limits: a list too long for its place is cut
whole rows at a time and says how many more there are; a text too long is shortened."""

from __future__ import annotations

from collections.abc import Sequence

TEXT_OBJECT_CHARS = 3_000  # a Block Kit text object (section, context element)
REPLY_CHARS = 3_900  # a message's text shown in full (Slack truncates beyond 4,000)


def shorten(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, ending in "…" when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def limited(rows: Sequence[str], limit: int = REPLY_CHARS, joiner: str = "\n") -> list[str]:
    """As many whole rows as fit in ``limit`` characters (joined), then "…and N more"."""
    kept: list[str] = []
    used = 0
    for number, row in enumerate(rows):
        left = len(rows) - number
        more = f"…and {left} more"
        cost = len(row) + (len(joiner) if kept else 0)
        # Room for this row, and for the "more" line should a later row not fit.
        reserve = 0 if left == 1 else len(joiner) + len(f"…and {left - 1} more")
        if used + cost + reserve > limit:
            kept.append(more)
            return kept
        kept.append(row)
        used += cost
    return kept
