"""Block Kit and task cards for a turn (pure), within Slack's limits."""

from __future__ import annotations

import json

from bot.slack.blocks.messages import (
    FEEDBACK_ACTION,
    STOP_ACTION,
    answer_blocks,
    control_blocks,
    home_view,
    turn_blocks,
)
from bot.slack.blocks.tasks import TaskState, ToolTask, settle_task, task_chunk, tasks_text

TASKS = [
    ToolTask("1", "search", TaskState.RUNNING),
    ToolTask("2", "calculate", TaskState.DONE, 12.4, "42"),
    ToolTask("3", "fetch_url", TaskState.FAILED, 30001, "fetch_url took longer than 30 s"),
    ToolTask("4", "slow", TaskState.STOPPED),
]


def test_task_rows_and_the_summary() -> None:
    assert tasks_text(TASKS, finished=False).splitlines() == [
        ":hourglass_flowing_sand: `search` running…",
        ":white_check_mark: `calculate` done in 12 ms",
        ":warning: `fetch_url` failed: fetch_url took longer than 30 s",
        ":black_square_for_stop: `slow` stopped",
    ]
    assert tasks_text(TASKS[1:2], finished=True).endswith("Used 1 tool (12 ms in all)")


def test_task_cards_for_a_stream() -> None:
    cards = [task_chunk(task).to_dict() for task in TASKS]
    assert [c["status"] for c in cards] == ["in_progress", "complete", "error", "error"]
    assert cards[1] == {
        "type": "task_update",
        "id": "2",
        "title": "calculate (12 ms)",
        "status": "complete",
        "output": "42",
    }
    assert cards[2]["output"] == "fetch_url took longer than 30 s"


def test_a_turns_message_while_it_runs_and_when_it_is_done() -> None:
    running = turn_blocks(TASKS, "", finished=False, stop="v")
    assert [b["type"] for b in running] == ["context", "markdown", "actions"]
    assert running[1]["text"] == "Working on it…"
    assert running[2]["elements"][0]["action_id"] == STOP_ACTION
    done = turn_blocks(TASKS, "The answer.", finished=True, stop="v", feedback={"t": "1-0"})
    assert [b["type"] for b in done] == ["context", "markdown", "context_actions"]
    feedback = done[2]["elements"][0]
    assert feedback["action_id"] == FEEDBACK_ACTION
    assert json.loads(feedback["positive_button"]["value"]) == {"t": "1-0", "v": "up"}
    assert json.loads(feedback["negative_button"]["value"])["v"] == "down"
    assert [b["type"] for b in control_blocks("v")] == ["context", "actions"]


def test_a_thousand_tools_stay_within_a_text_object() -> None:
    many = [ToolTask(str(n), f"tool_{n}", TaskState.DONE, 1.0) for n in range(1000)]
    text = tasks_text(many, finished=True)
    assert len(text) <= 3000
    assert "…and " in text and text.endswith("Used 1000 tools (1000 ms in all)")


def test_answer_and_home_blocks() -> None:
    assert answer_blocks("**hi**") == [{"type": "markdown", "text": "**hi**"}]
    view = home_view(
        [("admin", "listed in the config")],
        [("calculate", "Evaluate arithmetic.\nMore.")],
        "/agent",
    ).to_dict()
    assert view["type"] == "home"
    assert "• `calculate` — Evaluate arithmetic." in json.dumps(view, ensure_ascii=False)
    assert "• *admin* — listed in the config" in json.dumps(view, ensure_ascii=False)
    long = home_view([], [(f"tool_{n}", "x" * 100) for n in range(500)], "/agent").to_dict()
    [tools] = [b for b in long["blocks"] if "tool_0" in json.dumps(b)]
    assert len(tools["text"]["text"]) <= 3000 and "…and " in tools["text"]["text"]


def test_a_task_an_earlier_attempt_left_running_takes_its_outcome_from_the_results() -> None:
    done, failed, lost = ToolTask("a", "lookup"), ToolTask("b", "pay"), ToolTask("c", "wait")
    settle_task(done, "12 in stock")
    settle_task(failed, '{"error": "Interrupted", "message": "outcome unknown"}')
    settle_task(lost, None)
    assert [(t.state, t.detail) for t in (done, failed, lost)] == [
        (TaskState.DONE, "12 in stock"),
        (TaskState.FAILED, "outcome unknown"),
        (TaskState.STOPPED, ""),
    ]
    text = tasks_text([done, failed, lost], finished=True)
    assert ":white_check_mark: `lookup` done\n" in text and "running" not in text
