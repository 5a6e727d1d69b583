"""Lists and texts kept inside Slack's limits (pure)."""

from __future__ import annotations

from bot.slack.blocks.limits import limited, shorten


def test_a_list_that_fits_is_kept_whole() -> None:
    rows = [f"row {n}" for n in range(5)]
    assert limited(rows, 1000) == rows


def test_a_long_list_is_cut_whole_rows_at_a_time_and_says_how_many_more() -> None:
    rows = [f"• `tool_{n:03}` — does thing number {n}" for n in range(500)]
    kept = limited(rows, 3000)
    assert len("\n".join(kept)) <= 3000
    assert kept[-1] == f"…and {500 - (len(kept) - 1)} more"
    assert kept[:-1] == rows[: len(kept) - 1]


def test_shorten_marks_the_cut() -> None:
    assert shorten("abc", 5) == "abc"
    assert shorten("abcdefgh", 5) == "abcd…"
