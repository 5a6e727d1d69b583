"""Reading a call's arguments: whatever the model wrote, an object or a refusal in words,
never an exception (pure)."""

from __future__ import annotations

import json

import pytest

from bot.agent.arguments import (
    MAX_DEPTH,
    REFUSED,
    ArgumentsRefused,
    depth,
    parse_arguments,
    screened,
)
from bot.llm.response import ToolCall


def call(arguments: str) -> ToolCall:
    return ToolCall("c1", "lookup", arguments)


def refusal(arguments: str) -> tuple[str, str]:
    with pytest.raises(ArgumentsRefused) as caught:
        parse_arguments(call(arguments))
    return caught.value.kind, str(caught.value)


def test_good_arguments_are_read_and_kept_as_written() -> None:
    written = '{"item": "flour", "shelves": [[1, 2], [3]]}'
    assert parse_arguments(call(written)) == {"item": "flour", "shelves": [[1, 2], [3]]}
    assert parse_arguments(call("  ")) == {}
    assert screened(call(written)) == call(written)


def test_what_cannot_be_read_is_refused_in_words() -> None:
    assert refusal("[" * 100_000) == (
        "ArgumentsTooDeep",
        "The arguments for lookup are nested more than 64 levels deep. Send a flatter JSON object.",
    )
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert refusal(f'{{"a": {deep}}}')[0] == "ArgumentsTooDeep"
    assert parse_arguments(call(f'{{"a": {deep[1:-1]}}}'))  # 64 levels with the object
    assert refusal(json.dumps({"q": "x" * 300_000})) == (
        "ArgumentsTooLarge",
        "The arguments for lookup are larger than 256 KB, the most one call may send. Send "
        "less: fewer or shorter values.",
    )
    assert refusal(json.dumps({"q": "é" * 140_000}))[0] == "ArgumentsTooLarge"  # in bytes
    kind, message = refusal('{"item": ')
    assert kind == "InvalidJSON" and "not valid JSON (Expecting value at position 8)" in message
    assert refusal("1" * 5000)[0] == "InvalidJSON"  # too many digits for Python's int
    assert refusal("[1, 2]") == (
        "InvalidJSON",
        "The arguments for lookup must be a JSON object, not list.",
    )


def test_refused_arguments_are_kept_as_their_refusal_and_read_back_the_same() -> None:
    kept = screened(call("[" * 100_000))
    assert json.loads(kept.arguments) == {
        REFUSED: "ArgumentsTooDeep",
        "message": "The arguments for lookup are nested more than 64 levels deep. Send a "
        "flatter JSON object.",
    }
    assert len(kept.arguments) < 200
    # A call run again (after a crash) from what the turn kept is refused the same way.
    assert refusal(kept.arguments) == refusal("[" * 100_000)


def test_depth_is_counted_without_recursion() -> None:
    assert depth({}) == 1 and depth({"a": [1, {"b": []}]}) == 4 and depth("x") == 0
    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    assert depth(value) == MAX_DEPTH + 1  # stops counting past the limit
