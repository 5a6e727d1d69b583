from __future__ import annotations

from bot.slack.blocks import ToolLine, answer_blocks, home_view, progress_blocks, progress_text
from bot.slack.progress import settle_line


def test_progress_lines() -> None:
    lines = [
        ToolLine("1", "search", "running"),
        ToolLine("2", "calculate", "done", 12.4),
        ToolLine("3", "fetch_url", "failed", 30001, "fetch_url took longer than 30 s"),
        ToolLine("4", "slow", "stopped"),
    ]
    text = progress_text(lines, note="Let me check.")
    assert text.splitlines() == [
        "_Let me check._",
        ":hourglass_flowing_sand: `search` running…",
        ":white_check_mark: `calculate` done in 12 ms",
        ":warning: `fetch_url` failed: fetch_url took longer than 30 s",
        ":black_square_for_stop: `slow` stopped",
    ]
    assert progress_text([]) == "Working on it…"
    finished = progress_text(lines[1:2], finished=True)
    assert finished.endswith("Used 1 tool (12 ms in all)")
    assert progress_blocks(lines)[0]["type"] == "context"


def test_answer_and_home_blocks() -> None:
    assert answer_blocks("**hi**") == [{"type": "markdown", "text": "**hi**"}]
    view = home_view(
        [("admin", "listed in the config")],
        [("calculate", "Evaluate arithmetic.\nMore.")],
        "/agent",
    )
    assert view["type"] == "home"
    assert "• `calculate` — Evaluate arithmetic." in str(view)
    assert "• *admin* — listed in the config" in str(view)


def test_a_row_an_earlier_attempt_left_running_takes_its_outcome_from_the_results() -> None:
    done, failed, lost = ToolLine("a", "lookup"), ToolLine("b", "pay"), ToolLine("c", "wait")
    settle_line(done, "12 in stock")
    settle_line(failed, '{"error": "Interrupted", "message": "outcome unknown"}')
    settle_line(lost, None)
    assert [(line.state, line.reason) for line in (done, failed, lost)] == [
        ("done", ""),
        ("failed", "outcome unknown"),
        ("stopped", ""),
    ]
    text = progress_text([done, failed, lost], finished=True)
    assert ":white_check_mark: `lookup` done\n" in text and "running" not in text
