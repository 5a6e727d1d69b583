"""A stdio server's stderr lines are cut between words, so a secret in them is logged whole
(and then redacted) or not at all, never half of it."""

from __future__ import annotations

import logging

import pytest

from tools.mcp.stderr import LINE_CHARS, ServerStderr, shortened

SECRET = "--token=s3cr3t-" + "x" * 40


def test_a_short_line_is_kept_as_it_is() -> None:
    assert shortened("listening on stdio") == "listening on stdio"


@pytest.mark.parametrize("start", range(LINE_CHARS - 60, LINE_CHARS + 5, 7))
def test_a_word_across_the_cut_is_left_out_whole(start: int) -> None:
    line = "a" * (start - 1) + " " + SECRET + " tail"
    cut = shortened(line)
    assert len(cut) <= LINE_CHARS + 40
    assert cut.endswith("more characters)") == (len(line) > LINE_CHARS)
    # Either the whole argument or none of it: no prefix of it at the end of what is kept.
    kept = cut.rsplit(" … (", 1)[0]
    assert SECRET in kept or not any(kept.endswith(SECRET[:n]) for n in range(3, len(SECRET)))


def test_a_line_without_spaces_is_not_shown() -> None:
    cut = shortened("k" * (LINE_CHARS * 2))
    assert cut == f"… ({LINE_CHARS * 2} more characters)"


def test_the_logged_line_and_the_last_words_are_cut_alike(caplog: pytest.LogCaptureFixture) -> None:
    stderr = ServerStderr("warehouse")
    line = "b" * (LINE_CHARS - 10) + " " + SECRET
    with caplog.at_level(logging.INFO, logger="tools.mcp.server"):
        stderr.line(line + "\n")
    [record] = caplog.records
    assert record.getMessage() == f"warehouse: {stderr.last_words()}"
    assert "s3cr3t" not in record.getMessage() and "--tok" not in record.getMessage()
