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
from bot.slack.blocks.tasks import (
    TaskState,
    ToolTask,
    catch_up,
    settle_task,
    task_chunk,
    task_row,
    tasks_text,
    with_output,
)
from bot.slack.blocks.tool_output import SHOW_OUTPUT_ACTION, OutputButton

TASKS = [
    ToolTask("1", "search", TaskState.RUNNING, progress="40 % – Bob's file", amount="40 %"),
    ToolTask("2", "calculate", TaskState.DONE, 12.4, "42"),
    ToolTask(
        "3",
        "fetch_url",
        TaskState.FAILED,
        30001,
        "fetch_url took longer than 30 s",
        error="TimeoutError",
    ),
    ToolTask("4", "slow", TaskState.STOPPED),
]


def test_task_rows_and_the_summary() -> None:
    # In a DM (the person who asked reads alone): the tool's words show.
    assert tasks_text(TASKS, finished=False, private=True).splitlines() == [
        ":hourglass_flowing_sand: `search` 40 % – Bob's file",
        ":white_check_mark: `calculate` done in 12 ms",
        ":warning: `fetch_url` failed: fetch_url took longer than 30 s",
        ":black_square_for_stop: `slow` stopped",
    ]
    # In a channel: names, states, durations, the error's kind; no words of the tool.
    assert tasks_text(TASKS, finished=False, private=False).splitlines() == [
        ":hourglass_flowing_sand: `search` 40 %",
        ":white_check_mark: `calculate` done in 12 ms",
        ":warning: `fetch_url` failed (TimeoutError)",
        ":black_square_for_stop: `slow` stopped",
    ]
    assert tasks_text(TASKS[1:2], finished=True, private=False).endswith(
        "Used 1 tool (12 ms in all)"
    )


def test_task_cards_for_a_stream() -> None:
    cards = [task_chunk(task, private=True).to_dict() for task in TASKS]
    assert [c["status"] for c in cards] == ["in_progress", "complete", "error", "error"]
    assert cards[1] == {
        "type": "task_update",
        "id": "2",
        "title": "calculate (12 ms)",
        "status": "complete",
        "output": "42",
    }
    assert cards[0]["details"] == "40 % – Bob's file"
    assert cards[2]["output"] == "fetch_url took longer than 30 s"


def test_a_channels_task_cards_show_no_output() -> None:
    secret = "SECRET-7000 <!channel>"
    tasks = [
        ToolTask(
            "1", "search_payroll", TaskState.RUNNING, progress=f"50 % – {secret}", amount="50 %"
        ),
        ToolTask("2", "search_payroll", TaskState.DONE, 8.0, secret),
        ToolTask("3", "search_payroll", TaskState.FAILED, 9.0, secret, error="ToolError"),
    ]
    cards = [task_chunk(task, private=False).to_dict() for task in tasks]
    assert "SECRET" not in json.dumps(cards)
    assert cards == [
        {"type": "task_update", "id": "1", "title": "search_payroll", "status": "in_progress",
         "details": "50 %"},
        {"type": "task_update", "id": "2", "title": "search_payroll (8 ms)", "status": "complete"},
        {"type": "task_update", "id": "3", "title": "search_payroll", "status": "error",
         "output": "failed (ToolError)"},
    ]  # fmt: skip
    blocks = turn_blocks(tasks, "", finished=True, private=False)
    assert "SECRET" not in json.dumps(blocks)
    assert "SECRET" not in " ".join(task_row(task, private=False) for task in tasks)
    # In a DM the output's start shows, its codes escaped.
    assert "SECRET-7000 &lt;!channel&gt;" in task_chunk(tasks[1], private=True).to_dict()["output"]


def test_a_waiting_call_shows_waiting_for_approval_never_complete() -> None:
    waiting = ToolTask("o1", "place_order", TaskState.WAITING, 3.0)
    for private in (True, False):
        card = task_chunk(waiting, private=private).to_dict()
        assert card["status"] == "pending"
        assert card["details"].startswith("waiting for approval")
        assert "output" not in card
        assert task_row(waiting, private=private) == ":lock: `place_order` waiting for approval"


def test_a_waiting_card_catches_up_with_how_the_call_ended() -> None:
    shown = [
        ToolTask("p1", "get_price", TaskState.DONE, 4.0, "101.5"),
        ToolTask("o1", "place_order", TaskState.WAITING),
        ToolTask("c1", "cancel_orders", TaskState.WAITING),
    ]
    assert catch_up(shown, {}, {}) is None  # nothing ended yet
    still = {"o1": ToolTask("o1", "place_order", TaskState.RUNNING)}
    assert catch_up(shown, still, {}) is None  # running again below: not ended
    ran = {"o1": ToolTask("o1", "place_order", TaskState.DONE, 120.0, "bought")}
    moved = catch_up(shown, ran, {})
    assert moved is not None
    assert [t.state for t in moved] == [TaskState.DONE, TaskState.DONE, TaskState.WAITING]
    assert moved[1].duration_ms == 120.0
    denied = '{"error": "NotConfirmed", "message": "denied by <@U0BOB>"}'
    moved = catch_up(shown, ran, {"c1": denied})
    assert moved is not None and moved[2].state is TaskState.FAILED
    assert moved[2].error == "NotConfirmed"
    assert shown[1].state is TaskState.WAITING  # the input is not changed


def test_the_show_output_button_only_once_finished() -> None:
    button = OutputButton("T1", "C1", "1.0", "0/1-0")
    assert OutputButton.parse(button.value()) == button
    running = turn_blocks(TASKS, "", finished=False, private=False, output=button)
    assert SHOW_OUTPUT_ACTION not in json.dumps(running)
    done = turn_blocks(TASKS, "The answer.", finished=True, private=False, output=button)
    [actions] = [b for b in done if b["type"] == "actions"]
    assert actions["elements"][0]["action_id"] == SHOW_OUTPUT_ACTION
    assert json.loads(actions["elements"][0]["value"])["turn"] == "0/1-0"
    assert with_output(TASKS) and not with_output(TASKS[3:])


def test_a_turns_message_while_it_runs_and_when_it_is_done() -> None:
    running = turn_blocks(TASKS, "", finished=False, private=False, stop="v")
    assert [b["type"] for b in running] == ["context", "markdown", "actions"]
    assert running[1]["text"] == "Working on it…"
    assert running[2]["elements"][0]["action_id"] == STOP_ACTION
    done = turn_blocks(
        TASKS, "The answer.", finished=True, private=False, stop="v", feedback={"t": "1-0"}
    )
    assert [b["type"] for b in done] == ["context", "markdown", "context_actions"]
    feedback = done[2]["elements"][0]
    assert feedback["action_id"] == FEEDBACK_ACTION
    assert json.loads(feedback["positive_button"]["value"]) == {"t": "1-0", "v": "up"}
    assert json.loads(feedback["negative_button"]["value"])["v"] == "down"
    assert [b["type"] for b in control_blocks("v")] == ["context", "actions"]


def test_a_thousand_tools_stay_within_a_text_object() -> None:
    many = [ToolTask(str(n), f"tool_{n}", TaskState.DONE, 1.0) for n in range(1000)]
    text = tasks_text(many, finished=True, private=False)
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
    assert [(t.state, t.detail, t.error) for t in (done, failed, lost)] == [
        (TaskState.DONE, "12 in stock", ""),
        (TaskState.FAILED, "outcome unknown", "Interrupted"),
        (TaskState.STOPPED, "", ""),
    ]
    text = tasks_text([done, failed, lost], finished=True, private=False)
    assert ":white_check_mark: `lookup` done\n" in text and "running" not in text


def test_the_home_tab_shows_an_admin_the_channels_with_settings_of_their_own() -> None:
    rows = ["• <#C0SUPPORT> — file: instructions; memory on", "• `C0ENG*` — file: tools `get_*`"]
    admins = json.dumps(home_view([], [], "/agent", rows).to_dict(), ensure_ascii=False)
    assert "Channels with settings of their own" in admins
    assert "• <#C0SUPPORT> — file: instructions; memory on\\n• `C0ENG*` — file: tools" in admins
    nobody = json.dumps(home_view([], [], "/agent", []).to_dict(), ensure_ascii=False)
    assert "No channel has settings of its own: every channel gets the defaults." in nobody
    others = json.dumps(home_view([], [], "/agent").to_dict(), ensure_ascii=False)
    assert "Channels with" not in others
    many = home_view(
        [], [], "/agent", [f"• <#C{n:08d}> — set in Slack: memory on" for n in range(500)]
    )
    [listed] = [b for b in many.to_dict()["blocks"] if "C00000000" in json.dumps(b)]
    assert len(listed["text"]["text"]) <= 3000 and "…and " in listed["text"]["text"]


def test_the_home_tab_shows_ones_own_schedules() -> None:
    rows = ["• `s1` — “Summarise” — at 09:00 (UTC) — next <!date^1^{date}|x>"]
    own = json.dumps(home_view([], [], "/agent", None, rows).to_dict(), ensure_ascii=False)
    assert "Your schedules" in own and "• `s1` — “Summarise” — at 09:00 (UTC)" in own
    assert "`/agent pause <id>`" in own
    none = json.dumps(home_view([], [], "/agent", None, []).to_dict(), ensure_ascii=False)
    assert "You have no schedules." in none
    assert "Your schedules" not in json.dumps(home_view([], [], "/agent").to_dict())
    many = home_view([], [], "/agent", None, [f"• `s{n}` — " + "x" * 80 for n in range(500)])
    [listed] = [b for b in many.to_dict()["blocks"] if "`s0`" in json.dumps(b)]
    assert len(listed["text"]["text"]) <= 3000 and "…and " in listed["text"]["text"]
