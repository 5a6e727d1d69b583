"""Splitting long answers: nothing lost, code and tables kept whole or re-fenced."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.slack.blocks.limits import MARKDOWN_PART_CHARS
from bot.slack.blocks.split import split_markdown

FENCE = re.compile(r"^\s*(```|~~~)")


def fences_balanced(part: str) -> bool:
    return sum(1 for line in part.splitlines() if FENCE.match(line)) % 2 == 0


def is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    position = 0
    for line in haystack:
        if position < len(needles) and line == needles[position]:
            position += 1
    return position == len(needles)


def test_short_text_is_one_part() -> None:
    assert split_markdown("hello") == ["hello"]


def test_a_30000_character_answer_with_a_table_and_code() -> None:
    table = "| item | stock |\n|---|---|\n" + "".join(f"| flour {n} | {n} |\n" for n in range(40))
    code = "```python\n" + "".join(f"print({n})\n" for n in range(60)) + "```\n"
    paragraphs = "\n".join(f"Paragraph {n}. " + "words " * 150 + "\n" for n in range(30))
    text = paragraphs[:9000] + "\n\n" + table + "\n" + code + "\n" + paragraphs
    assert len(text) > 25_000
    parts = split_markdown(text)
    assert len(parts) >= 3
    assert all(len(p) <= MARKDOWN_PART_CHARS for p in parts)
    assert all(fences_balanced(p) for p in parts)
    # The table and the code block each sit whole inside one part.
    assert sum(table.strip() in p for p in parts) == 1
    assert sum(code.strip() in p for p in parts) == 1
    # Nothing is lost: every line of the answer is there, in order (trailing spaces aside).
    original = [line.rstrip() for line in text.splitlines() if line.strip()]
    joined = [line.rstrip() for p in parts for line in p.splitlines() if line.strip()]
    assert joined == original


def test_a_huge_code_block_is_refenced_with_its_language() -> None:
    code = "```sql\n" + "".join(f"SELECT {n} FROM t;\n" for n in range(2000)) + "```"
    parts = split_markdown("Here:\n\n" + code + "\n\nDone.", limit=5000)
    assert len(parts) > 3
    code_parts = [p for p in parts if "SELECT" in p]
    assert all("```sql\n" in p for p in code_parts)  # every piece re-opens with the language
    assert all(len(p) <= 5000 and fences_balanced(p) for p in parts)
    selects = [line for p in parts for line in p.splitlines() if line.startswith("SELECT")]
    assert selects == [f"SELECT {n} FROM t;" for n in range(2000)]
    assert parts[-1].endswith("Done.")


def test_a_huge_table_repeats_its_header() -> None:
    rows = "".join(f"| row {n} | {'x' * 50} |\n" for n in range(500))
    parts = split_markdown("| name | value |\n|---|---|\n" + rows, limit=4000)
    assert len(parts) > 3
    assert all(p.startswith("| name | value |\n|---|---|\n") for p in parts)
    found = [line for p in parts for line in p.splitlines()[2:]]
    assert found == rows.splitlines()


def test_one_enormous_line_is_broken_without_loss() -> None:
    text = "word " * 10_000
    parts = split_markdown(text, limit=3000)
    assert all(len(p) <= 3000 for p in parts)
    assert " ".join(" ".join(parts).split()) == " ".join(text.split())


blocks = st.one_of(
    st.text(alphabet="abc ,.", min_size=1, max_size=300).map(lambda t: t.strip() or "x"),
    st.lists(st.text(alphabet="xyz =()", min_size=1, max_size=80), min_size=1, max_size=40).map(
        lambda lines: "```py\n" + "\n".join(line.strip() or "pass" for line in lines) + "\n```"
    ),
    st.lists(st.integers(0, 999), min_size=1, max_size=40).map(
        lambda ns: "| a | b |\n|---|---|\n" + "\n".join(f"| {n} | {n * 2} |" for n in ns)
    ),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(blocks, min_size=1, max_size=40), st.integers(300, 3000))
def test_every_part_fits_and_nothing_is_lost(pieces: list[str], limit: int) -> None:
    text = "\n\n".join(pieces)
    parts = split_markdown(text, limit=limit)
    assert all(len(p) <= limit for p in parts)
    assert all(fences_balanced(p) for p in parts)
    original = [line.rstrip() for line in text.splitlines() if line.strip()]
    joined = [line.rstrip() for p in parts for line in p.splitlines() if line.strip()]
    # Only fences and repeated table headers are added.
    assert is_subsequence(original, joined)
    extra = len(joined) - len(original)
    added = [line for line in joined if FENCE.match(line) or line in ("| a | b |", "|---|---|")]
    assert extra <= len(added)
