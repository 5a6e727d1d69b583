"""Repairing message lists before a model call, checked on examples and on random lists."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.agent.messages import INTERRUPTED, assistant_message, repair, tool_message
from bot.llm.response import ToolCall


def call_message(*ids: str) -> dict[str, Any]:
    return assistant_message("", [ToolCall(i, "f", "{}") for i in ids])


def test_a_valid_list_is_unchanged() -> None:
    messages = [
        {"role": "user", "content": "q"},
        call_message("a", "b"),
        tool_message("a", "1"),
        tool_message("b", "2"),
        assistant_message("done"),
    ]
    assert repair(messages) == messages


def test_a_call_without_result_gets_an_interrupted_result() -> None:
    messages = [{"role": "user", "content": "q"}, call_message("a", "b"), tool_message("b", "2")]
    repaired = repair(messages)
    assert repaired[2:] == [tool_message("a", INTERRUPTED), tool_message("b", "2")]
    assert json.loads(INTERRUPTED)["error"] == "Interrupted"
    assert len(messages) == 3  # the input is left alone


def test_results_without_calls_are_dropped() -> None:
    messages = [
        tool_message("x", "stray at the start"),
        {"role": "user", "content": "q"},
        tool_message("y", "stray after a user message"),
        call_message("a"),
        tool_message("a", "1"),
        tool_message("z", "not a call of this message"),
        tool_message("a", "a duplicate"),
    ]
    assert repair(messages) == [
        {"role": "user", "content": "q"},
        call_message("a"),
        tool_message("a", "1"),
    ]


def test_results_separated_from_their_call_are_replaced() -> None:
    messages = [
        call_message("a"),
        {"role": "user", "content": "interrupting"},
        tool_message("a", "late"),
    ]
    assert repair(messages) == [
        call_message("a"),
        tool_message("a", INTERRUPTED),
        {"role": "user", "content": "interrupting"},
    ]


# Random lists: user and assistant text, assistant calls, and tool results with ids that may
# or may not match anything.
ids = st.sampled_from(["a", "b", "c", "d"])
message = st.one_of(
    st.builds(lambda: {"role": "user", "content": "u"}),
    st.builds(lambda: assistant_message("t")),
    st.lists(ids, min_size=1, max_size=3, unique=True).map(lambda xs: call_message(*xs)),
    ids.map(lambda i: tool_message(i, "r")),
)


@given(st.lists(message, max_size=25))
def test_every_call_has_exactly_one_result_and_every_result_a_call(
    messages: list[dict[str, Any]],
) -> None:
    repaired = repair(messages)
    position = 0
    while position < len(repaired):
        current = repaired[position]
        assert current["role"] != "tool", "a result with no call right before it"
        position += 1
        wanted = [c["id"] for c in current.get("tool_calls") or ()]
        got = [m["tool_call_id"] for m in repaired[position : position + len(wanted)]]
        assert got == wanted
        position += len(wanted)
    # Nothing that was not a tool result is ever dropped, and order is kept.
    kept = [m for m in repaired if m["role"] != "tool"]
    assert kept == [m for m in messages if m["role"] != "tool"]
    assert repair(repaired) == repaired
