"""The lines under an answer that say what the turn saved to memory (pure Block Kit)."""

from __future__ import annotations

from bot.channels.remember import CHANNEL, PERSONAL, Remembered
from bot.slack.blocks.memory import MAX_LINES, memory_block, saved_lines


def test_one_line_a_note_escaped_and_the_rest_counted() -> None:
    assert memory_block([]) is None
    notes = [
        Remembered("n1", "Ping <!channel> & <@U0BOSS> on \u202eincidents", CHANNEL),
        Remembered("n2", "Metric units.", PERSONAL),
    ]
    assert saved_lines(notes) == [
        "Saved to this channel's memory: “Ping &lt;!channel&gt; &amp; &lt;@U0BOSS&gt; on "
        "[U+202E]incidents”",
        "Saved to your memory: “Metric units.”",
    ]
    block = memory_block(notes)
    assert block is not None
    shown = block.to_dict()
    assert shown["type"] == "context"
    assert [e["text"] for e in shown["elements"]] == saved_lines(notes)
    many = [Remembered(f"n{n}", f"note {n}", CHANNEL) for n in range(MAX_LINES + 3)]
    lines = saved_lines(many, "/ops")
    assert len(lines) == MAX_LINES + 1
    assert lines[-1] == "…and 3 more saved (`/ops memory` lists them)."
    many_block = memory_block(many)
    assert many_block is not None and len(many_block.to_dict()["elements"]) == 10
