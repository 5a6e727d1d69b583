from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from bot.agent.truncation import truncate_middle


def test_short_text_is_untouched() -> None:
    assert truncate_middle("hello", 10) == "hello"
    assert truncate_middle("x" * 10, 10) == "x" * 10


def test_head_tail_and_an_honest_marker() -> None:
    text = "H" * 600 + "M" * 5000 + "T" * 400
    cut = truncate_middle(text, 1000)
    assert len(cut) <= 1000
    match = re.search(r"\n\[\.\.\. (\d+) characters dropped \.\.\.\]\n", cut)
    assert match is not None
    head, tail = cut[: match.start()], cut[match.end() :]
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + len(tail) + int(match.group(1)) == len(text)
    assert len(head) > len(tail)


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=200, max_value=2500))
def test_never_longer_than_the_limit_and_the_count_adds_up(text: str, limit: int) -> None:
    cut = truncate_middle(text, limit)
    assert len(cut) <= limit
    if len(text) > limit:
        match = re.search(r"\n\[\.\.\. (\d+) characters dropped \.\.\.\]\n", cut)
        assert match is not None
        kept = len(cut) - (match.end() - match.start())
        assert kept + int(match.group(1)) == len(text)
