"""The line under an answer that says what the turn saved to memory (pure Block Kit): one a
note, "Saved to this channel's memory: “…”" (in a DM: "Saved to your memory: “…”"), so
nothing is remembered without people seeing it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject

from bot.channels.remember import Remembered, saved_words
from bot.slack.blocks.escape import escaped, visible

MAX_LINES = 9  # notes named under one answer, the rest counted: a context block holds 10


def saved_line(note: Remembered) -> str:
    """One note's line (the note escaped: it can mention nobody, link nowhere)."""
    return saved_words(replace(note, text=escaped(visible(note.text))))


def saved_lines(notes: Sequence[Remembered], command: str = "/agent") -> list[str]:
    """A line a note, at most :data:`MAX_LINES`; then how many more (``command memory``
    lists them all)."""
    lines = [saved_line(note) for note in notes[:MAX_LINES]]
    more = len(notes) - MAX_LINES
    if more > 0:
        lines.append(f"…and {more} more saved (`{command} memory` lists them).")
    return lines


def memory_block(notes: Sequence[Remembered], command: str = "/agent") -> ContextBlock | None:
    """The context block of those lines; None when the turn saved nothing."""
    if not notes:
        return None
    return ContextBlock(
        elements=[MarkdownTextObject(text=line) for line in saved_lines(notes, command)]
    )
