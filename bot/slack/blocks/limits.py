"""Slack's limits on what the bot shows, in one place, and keeping within them: a list too
long for its place is cut whole rows at a time and says how many more there are; a text too
long is shortened."""

from __future__ import annotations

from collections.abc import Sequence

TEXT_OBJECT_CHARS = 3_000  # a Block Kit text object (section, context element)
SECTION_TEXT_CHARS = 2_900  # a section's text, with room for what is added around it
MESSAGE_TEXT_CHARS = 3_900  # a message's `text` shown in full (Slack truncates beyond 4,000)
MARKDOWN_PART_CHARS = 11_000  # one part of an answer (a markdown block takes 12,000)
STREAMED_TEXT_CHARS = 10_000  # streamed while the loop runs; past this the final split shows it
INPUT_LABEL_CHARS = 2_000  # an input block's label and hint
ACTION_VALUE_CHARS = 2_000  # a button's value
OPTION_TEXT_CHARS = 75  # an option's text
OPTION_VALUE_CHARS = 150  # an option's value
MAX_OPTIONS = 100  # options in one select


def shorten(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, ending in "…" when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def limited(rows: Sequence[str], limit: int = MESSAGE_TEXT_CHARS, joiner: str = "\n") -> list[str]:
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
