"""The console asks MCP questions on the terminal, field by field, and shows progress."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterator
from typing import TextIO

import pytest

from bot.agent.events import ToolProgress
from bot.console.asker import ConsoleAsker, prompt_for
from bot.console.display import ConsoleDisplay
from bot.console.lines import LineReader
from tools.form_fields import form_fields
from tools.questions import Answer, Question

SCHEMA = {
    "type": "object",
    "properties": {
        "shelf": {"type": "string", "title": "Shelf"},
        "count": {"type": "integer", "minimum": 1},
        "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
        "note": {"type": "string"},
    },
    "required": ["shelf", "count"],
}
RESTOCK = Question("the MCP server wh", "How should I restock flour?", SCHEMA, timeout_s=10)


@pytest.fixture
def pipe() -> Iterator[tuple[TextIO, TextIO]]:
    """A terminal-like stdin: reads block until something is written."""
    read_fd, write_fd = os.pipe()
    reader, writer = os.fdopen(read_fd, "r"), os.fdopen(write_fd, "w")
    try:
        yield reader, writer
    finally:
        writer.close()
        reader.close()


async def test_a_form_field_by_field_with_retries_and_defaults() -> None:
    err = io.StringIO()
    # shelf: empty (required), then A3; count: unreadable, too small, then 5; size: the
    # default; note: left out.
    stdin = io.StringIO("\nA3\nfive\n0\n5\n\n\n")
    answer = await ConsoleAsker(LineReader(stdin), err).ask(RESTOCK)
    assert answer == Answer("accept", {"shelf": "A3", "count": 5, "size": "small"})
    said = err.getvalue()
    assert "  ? the MCP server wh asks: How should I restock flour?" in said
    assert "    (required)" in said and "    (give a number)" in said
    assert "    (count: the value is less than the minimum of 1)" in said

    answer = await ConsoleAsker(LineReader(io.StringIO("A3\n5\n2\n\n")), io.StringIO()).ask(RESTOCK)
    assert answer == Answer("accept", {"shelf": "A3", "count": 5, "size": "large"})


async def test_decline_and_yes_no_questions() -> None:
    err = io.StringIO()
    declined = await ConsoleAsker(LineReader(io.StringIO("/decline\n")), err).ask(RESTOCK)
    assert declined == Answer("decline")
    confirm = Question("the MCP server wh", "Clean up?", {}, timeout_s=10)
    yes = await ConsoleAsker(LineReader(io.StringIO("y\n")), io.StringIO()).ask(confirm)
    assert yes == Answer("accept", None)
    url = Question("the MCP server wh", "Sign in", {}, url="https://x.example", timeout_s=10)
    err = io.StringIO()
    no = await ConsoleAsker(LineReader(io.StringIO("n\n")), err).ask(url)
    assert no == Answer("decline") and "open: https://x.example" in err.getvalue()


async def test_no_answer_in_time_is_a_decline_and_the_late_line_is_kept(
    pipe: tuple[TextIO, TextIO],
) -> None:
    reader, writer = pipe
    lines = LineReader(reader)
    err = io.StringIO()
    confirm = Question("the MCP server wh", "Clean up?", {}, timeout_s=0.3)
    assert await ConsoleAsker(lines, err).ask(confirm) == Answer("decline")
    assert "(no answer in time: declined)" in err.getvalue()
    writer.write("next prompt\n")
    writer.flush()
    assert await asyncio.wait_for(lines.readline(), 5) == "next prompt\n"


def test_prompts_say_what_to_type() -> None:
    fields = {f.name: f for f in form_fields(SCHEMA)}
    assert prompt_for(fields["count"]) == "count (a whole number)"
    assert prompt_for(fields["size"]) == "size (1) small, 2) large) [small] optional"
    assert prompt_for(fields["note"]) == "note optional"


async def test_progress_lines_at_the_console() -> None:
    out, err = io.StringIO(), io.StringIO()
    display = ConsoleDisplay(out, err)
    await display(ToolProgress(1, "c1", "wh_long_count", 2, 5, "counting aisle 2"))
    await display(ToolProgress(1, "c1", "wh_long_count", 2, 5, "counting aisle 2"))  # same
    await display(ToolProgress(1, "c1", "wh_long_count", 5, 5, "all counted"))
    assert err.getvalue().splitlines() == [
        "  … wh_long_count 40 % – counting aisle 2",
        "  … wh_long_count 100 % – all counted",
    ]


async def test_a_page_that_is_not_https_is_declined_unseen() -> None:
    for address in ("http://x.example/login", "javascript:alert(1)", "https://a@x.example/"):
        url = Question("the MCP server wh", "Sign in", {}, url=address, timeout_s=10)
        err = io.StringIO()
        answer = await ConsoleAsker(LineReader(io.StringIO("y\n")), err).ask(url)
        assert answer == Answer("decline")
        assert address not in err.getvalue() and "open:" not in err.getvalue()
        assert "not an https address: declined" in err.getvalue()
    url = Question("the MCP server wh", "Sign in", {}, url="https://x.example/a", timeout_s=10)
    err = io.StringIO()
    assert await ConsoleAsker(LineReader(io.StringIO("y\n")), err).ask(url) == Answer("accept")
    assert "    open: https://x.example/a\n    (a page on x.example)\n" in err.getvalue()
