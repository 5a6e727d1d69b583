"""The invariant checker on hand-made final states: it must catch what it claims to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fakes.slack_server import Message
from tests.faults.invariants import Run, check, left_behind, run_problems
from tests.faults.router import Sent
from tests.faults.script import Question

pytestmark = pytest.mark.faults

CHANNEL = "C0FAULTS"


def sent(thread: str, k: int, ts: float, root: float, *, probe: bool = False) -> Sent:
    return Sent(Question(thread, k), CHANNEL, f"{ts:.6f}", f"{root:.6f}", 0.0, probe)


def answer(text: str, ts: float, root: float, **fields: Any) -> Message:
    return Message(
        CHANNEL,
        f"{ts:.6f}",
        f"{root:.6f}",
        text,
        [{"type": "markdown", "text": text}],
        updated_at=ts,
        **fields,
    )


def request(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "fake-model", "messages": [{"role": "system", "content": "sys"}, *messages]}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def called(call_id: str) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": "slow_step", "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def result(call_id: str, content: str = "step done") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


# One thread: m1, m2 written, m3 the probe.
SENT = [sent("t1", 1, 10, 10), sent("t1", 2, 11, 10), sent("t1", 3, 30, 10, probe=True)]
GOOD_HISTORY = request(
    user("m1 t1"),
    called("c1"),
    result("c1"),
    said("answer to m1 t1"),
    user("m2 t1"),
    said("answer to m2 t1"),
    user("m3 t1"),
)


def test_a_clean_run_is_ok() -> None:
    messages = [
        answer("answer to m1 t1", 20, 10),
        answer("answer to m2 t1", 21, 10),
        answer("answer to m3 t1", 31, 10),
    ]
    report = check("clean", SENT, messages, [GOOD_HISTORY], fault_end=15.0)
    assert report.ok, report.text()
    assert (report.sent, report.probes, report.answered_once) == (2, 1, 3)
    assert report.recover_s == pytest.approx(6.0)  # the last answer of m1, m2 at 21


def test_duplicates_losses_and_misplaced_answers_are_counted() -> None:
    messages = [
        answer("answer to m1 t1", 20, 10),
        answer("answer to m1 t1\n\nagain", 21, 10),
        answer("answer to m3 t1", 31, 10),
        answer("answer to m2 t1", 40, 99),  # in another thread
        answer("answer to m2 t1 still going", 41, 10, streaming=True),  # unfinished
    ]
    report = check("faulty", SENT, messages, [GOOD_HISTORY], fault_end=15.0)
    assert (report.answered_once, report.duplicated, report.lost) == (1, 1, 1)
    assert report.answers[Question("t1", 1)] == 2
    assert len(report.misplaced) == 1 and "99.000000" in report.misplaced[0]
    assert report.recover_s is None
    assert not report.ok
    assert "m1 t1=2" in report.text() and "m2 t1=0" in report.text()


def test_order_counts_the_answers_that_would_have_to_move() -> None:
    written = [sent("t1", k, 10 + k, 11) for k in range(1, 6)]
    # Written m1..m5; shown m1 m3 m4 m2 m5: only m2 is out of place.
    shown_at = {1: 20, 3: 21, 4: 22, 2: 23, 5: 24}
    messages = [answer(f"answer to m{k} t1", ts, 11) for k, ts in shown_at.items()]
    report = check("order", written, messages, [])
    assert report.out_of_order == 1
    assert report.order == ["t1: written m1 m2 m3 m4 m5, answered m1 m3 m4 m2 m5"]


def test_order_holds_only_among_messages_pending_at_the_same_time() -> None:
    written = [sent("t1", k, 10 + k, 11) for k in range(1, 5)]
    # Answered m1 m3 m2 m4: m2 was redelivered late.
    shown_at = {1: 20, 3: 21, 2: 22, 4: 23}
    messages = [answer(f"answer to m{k} t1", ts, 11) for k, ts in shown_at.items()]
    questions = {k: Question("t1", k) for k in range(1, 5)}
    started = {questions[k]: float(at) for k, at in {1: 12, 3: 20.5, 2: 21.5, 4: 22.5}.items()}
    # m2 was queued only after m3 had started: allowed.
    late = {questions[1]: 11.0, questions[2]: 21.0, questions[3]: 11.5, questions[4]: 11.6}
    assert check("order", written, messages, [], queued=late, started=started).out_of_order == 0
    # m2 was queued before m3 started: m3 overtook a waiting message.
    waiting = {**late, questions[2]: 19.0}
    report = check("order", written, messages, [], queued=waiting, started=started)
    assert report.out_of_order == 1
    assert report.order == ["t1: written m1 m2 m3 m4, answered m1 m3 m2 m4"]


def test_left_behind_finds_open_streams_stop_buttons_and_running_words() -> None:
    stop = {
        "type": "actions",
        "elements": [{"type": "button", "action_id": "stop_turn", "value": "x"}],
    }
    running = {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": ":hourglass: `slow_step` running…"}],
    }
    messages = [
        Message(CHANNEL, "1.0", "1.0", "half an answ", streaming=True),
        Message(CHANNEL, "2.0", "1.0", "progress", [running, stop]),
        Message(CHANNEL, "3.0", "1.0", "Working on it…"),
        Message(CHANNEL, "4.0", "1.0", "Used 1 tool", [{"type": "context", "elements": []}]),
    ]
    problems = left_behind(messages)
    assert len(problems) == 4
    assert "still streaming" in problems[0]
    assert "Stop button" in problems[1] and "running…" in problems[2]
    assert "Working on it…" in problems[3]


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        (
            request(user("m1 t1"), said("answer to m1 t1"), user("m3 t1")),
            ["'m2 t1' appears 0 times", "shows 'answer to m2 t1' but the history does not"],
        ),
        (
            request(
                user("m1 t1"),
                user("m1 t1"),
                said("answer to m1 t1"),
                user("m2 t1"),
                said("answer to m2 t1"),
                user("m3 t1"),
            ),
            ["'m1 t1' appears 2 times"],
        ),
        (
            request(
                user("m1 t1"),
                called("c1"),
                said("answer to m1 t1"),
                user("m2 t1"),
                said("answer to m2 t1 and answer to m9 t1"),
                user("m3 t1"),
            ),
            ["'answer to m9 t1', which the thread never", "tool call c1 (slow_step) has no result"],
        ),
        (
            request(
                user("m1 t1"),
                called("c1"),
                result("c1", json.dumps({"error": "Interrupted", "message": "x"})),
                said("answer to m1 t1"),
                user("m2 t1"),
                said("answer to m2 t1"),
                user("m3 t1"),
            ),
            ["tool call c1 (slow_step) has only an 'interrupted' stand-in"],
        ),
        (request(user("m1 t1"), said("answer to m1 t1")), ["the probe 'm3 t1' never reached"]),
    ],
    ids=["missing", "twice", "unpaired-and-unshown", "interrupted", "no-probe"],
)
def test_history_problems_are_named(history: dict[str, Any], expected: list[str]) -> None:
    messages = [
        answer("answer to m1 t1", 20, 10),
        answer("answer to m2 t1", 21, 10),
        answer("answer to m3 t1", 31, 10),
    ]
    report = check("history", SENT, messages, [history])
    assert len(report.history) == len(expected), report.history
    for problem, words in zip(report.history, expected, strict=True):
        assert words in problem


def test_the_first_request_for_the_probe_is_the_one_checked() -> None:
    later_round = request(
        user("m1 t1"), user("m3 t1"), called("c9"), result("c9")
    )  # a later round of the probe's turn: not its first request, so not judged
    messages = [
        answer("answer to m1 t1", 20, 10),
        answer("answer to m2 t1", 21, 10),
        answer("answer to m3 t1", 31, 10),
    ]
    report = check("history", SENT, messages, [later_round, GOOD_HISTORY])
    assert report.history == []


def test_answer_metadata_must_name_the_message_it_answers() -> None:
    def labelled(message_ts: str) -> dict[str, Any]:
        payload = {"turn": "1-0", "message": message_ts, "kind": "answer", "part": 1}
        return {"event_type": "slack_agent", "event_payload": payload}

    messages = [
        answer("answer to m1 t1", 20, 10, metadata=labelled("10.000000")),
        answer("answer to m2 t1", 21, 10, metadata=labelled("10.000000")),
        answer("answer to m3 t1", 31, 10),
    ]
    report = check("metadata", SENT, messages, [GOOD_HISTORY])
    assert len(report.metadata) == 1 and "shows 'answer to m2 t1'" in report.metadata[0]


def test_tool_runs_finished_steps_never_rerun_and_two_starts_at_most() -> None:
    runs = [
        Run("a", "start", 1, 1.0),
        Run("a", "finish", 1, 2.0),
        Run("a", "start", 2, 3.0),  # ran again after finishing
        Run("b", "start", 1, 1.0),  # killed mid-call, rerun once: fine
        Run("b", "start", 2, 5.0),
        Run("b", "finish", 2, 6.0),
        Run("c", "start", 1, 1.0),
        Run("c", "start", 2, 2.0),
        Run("c", "start", 3, 3.0),
    ]
    assert run_problems(runs) == [
        "a finished, then ran again (2 starts)",
        "c started 3 times (at most 2)",
    ]


def test_scenario_checks_decide_too() -> None:
    messages = [
        answer("answer to m1 t1", 20, 10),
        answer("answer to m2 t1", 21, 10),
        answer("answer to m3 t1", 31, 10),
    ]
    report = check("checks", SENT, messages, [GOOD_HISTORY])
    report.add("exited within 5 s", False, "still running after 5 s")
    assert not report.ok
    assert "check exited within 5 s: FAILED - still running after 5 s" in report.text()
