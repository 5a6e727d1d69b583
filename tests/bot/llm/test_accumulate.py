"""Rebuilding streamed chunks, read as the plain dicts the server sends."""

from __future__ import annotations

from typing import Any

from bot.llm.accumulate import StreamAccumulator
from bot.llm.response import ARGUMENTS_MAX_BYTES, NAME_MAX_CHARS, UNREADABLE_ARGUMENTS


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    made = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    return {**made, "choices": choices, **extra}


def call(
    index: int | None,
    call_id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
) -> dict[str, Any]:
    delta: dict[str, Any] = {"function": {}}
    if index is not None:
        delta["index"] = index
    if call_id:
        delta["id"], delta["type"] = call_id, "function"
    if name is not None:
        delta["function"]["name"] = name
    if arguments is not None:
        delta["function"]["arguments"] = arguments
    return delta


def feed(*chunks: dict[str, Any]) -> StreamAccumulator:
    acc = StreamAccumulator()
    for c in chunks:
        acc.add(c)
    return acc


def test_text_deltas_are_returned_and_joined() -> None:
    acc = StreamAccumulator()
    assert acc.add(chunk({"role": "assistant", "content": ""})) == ""
    assert acc.add(chunk({"content": "Hel"})) == "Hel"
    assert acc.add(chunk({"content": "lo"})) == "lo"
    acc.add(chunk({}, finish="stop"))
    assert acc.text == "Hello" and acc.finish_reason == "stop" and acc.tool_calls() == []


def test_several_calls_with_arguments_in_pieces_interleaved() -> None:
    acc = feed(
        chunk({"tool_calls": [call(0, "a", "search", "")]}),
        chunk({"tool_calls": [call(0, arguments='{"q": ')]}),
        chunk({"tool_calls": [call(1, "b", "add", '{"a"')]}),
        chunk({"tool_calls": [call(0, arguments='"flour"}')]}),
        chunk({"tool_calls": [call(1, arguments=": 1}")]}),
        chunk({}, finish="tool_calls"),
    )
    calls = acc.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "search", '{"q": "flour"}'),
        ("b", "add", '{"a": 1}'),
    ]
    assert acc.finish_reason == "tool_calls"


def test_calls_without_index_split_on_new_ids() -> None:
    acc = feed(
        chunk({"tool_calls": [call(None, "a", "one", "{}")]}),
        chunk({"tool_calls": [call(None, "b", "two", '{"x"')]}),
        chunk({"tool_calls": [call(None, arguments=": 2}")]}),
    )
    assert [(c.id, c.name, c.arguments) for c in acc.tool_calls()] == [
        ("a", "one", "{}"),
        ("b", "two", '{"x": 2}'),
    ]


def test_every_call_on_index_zero_with_new_ids() -> None:
    acc = feed(
        chunk({"tool_calls": [call(0, "a", "one", '{"n": 1}')]}),
        chunk({"tool_calls": [call(0, "b", "two", '{"n": ')]}),
        chunk({"tool_calls": [call(0, arguments="2}")]}),
    )
    assert [(c.id, c.arguments) for c in acc.tool_calls()] == [("a", '{"n": 1}'), ("b", '{"n": 2}')]


def test_a_name_repeated_in_every_delta_is_kept_once() -> None:
    acc = feed(
        chunk({"tool_calls": [call(0, "a", "lookup", '{"x"')]}),
        chunk({"tool_calls": [call(0, "a", "lookup", ": 1}")]}),
    )
    assert [(c.name, c.arguments) for c in acc.tool_calls()] == [("lookup", '{"x": 1}')]


def test_usage_and_model_from_the_last_chunk() -> None:
    acc = feed(
        chunk({"content": "x"}),
        chunk(
            None,
            usage={
                "prompt_tokens": 11,
                "completion_tokens": 3,
                "total_tokens": 14,
                "prompt_tokens_details": {"cached_tokens": 5},
            },
        ),
    )
    assert acc.usage is not None
    assert (acc.usage.prompt_tokens, acc.usage.completion_tokens, acc.usage.cached_tokens) == (
        11,
        3,
        5,
    )
    assert acc.model == "m"


def test_what_a_stream_keeps_of_a_call_is_bounded() -> None:
    piece = "x" * 65_536
    chunks = [chunk({"tool_calls": [call(0, "a", "n" * 1000, '{"q": "')]})]
    chunks += [chunk({"tool_calls": [call(0, arguments=piece)]}) for _ in range(100)]  # 6.5 MB
    [kept] = feed(*chunks).tool_calls()
    assert ARGUMENTS_MAX_BYTES < len(kept.arguments) <= ARGUMENTS_MAX_BYTES + len(piece)
    assert kept.name == "n" * NAME_MAX_CHARS


def test_arguments_sent_as_a_json_value_are_encoded() -> None:
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"a": deep}
    acc = feed(
        chunk({"tool_calls": [call(0, "a", "search")]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": {"q": "flour"}}}]}),
        chunk({"tool_calls": [call(1, "b", "search")]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": deep}}]}),
    )
    first, second = acc.tool_calls()
    assert first.arguments == '{"q": "flour"}'
    assert second.arguments == UNREADABLE_ARGUMENTS  # the loop refuses it as not JSON


def test_loose_shapes_are_skipped_not_fatal() -> None:
    acc = feed(
        chunk({"content": "a"}),
        {"model": "m", "choices": [None, "x", {"index": 0, "delta": None}]},
        {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
        chunk({"tool_calls": [None, {"index": 0, "id": "a", "function": None}]}),
        chunk({"tool_calls": [call(0, name="f", arguments="{}")]}),
        {"choices": None, "usage": None},
    )
    assert acc.text == "a"
    assert [(c.id, c.name, c.arguments) for c in acc.tool_calls()] == [("a", "f", "{}")]
