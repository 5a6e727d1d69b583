"""A streamed answer read as plain dicts: events however the bytes are cut, [DONE], errors
mid-stream, and the same chunks the openai SDK reads from the fake server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest

from bot.config.schema import LLMConfig
from bot.llm.client import OpenAIChatModel
from bot.llm.errors import LLMError
from bot.llm.response import ToolCall
from bot.llm.sse import STREAM_ERROR, YIELD_EVERY, EventData, chunks
from bot.llm.usage import Usage
from tests.fakes.llm_server import FakeLLM, Reply, calls, text

MakeModel = Callable[..., OpenAIChatModel]
TOOL = {"type": "function", "function": {"name": "f", "description": "F.", "parameters": {}}}
REQUEST = httpx2.Request("POST", "http://model.test/v1/chat/completions")


def events_of(pieces: list[bytes]) -> list[str]:
    events = EventData()
    found = [data for piece in pieces for data in events.feed(piece)]
    return found + events.finish()


STREAM = (
    b": a comment\n"
    b"event: message\nid: 7\nretry: 100\n"
    b'data: {"a": 1}\n\n'
    b'data:{"b":\ndata:  "two"}\r\n\r\n'
    b"id: only an id\n\n"
    b'data: {"c": "\xc3\xa9t\xc3\xa9"}\r\r'
    b"data: [DONE]\n\n"
)
EXPECTED = ['{"a": 1}', '{"b":\n "two"}', '{"c": "été"}', "[DONE]"]


def test_events_in_one_piece() -> None:
    assert events_of([STREAM]) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 16])
def test_events_however_the_bytes_are_cut(size: int) -> None:
    pieces = [STREAM[start : start + size] for start in range(0, len(STREAM), size)]
    assert events_of(pieces) == EXPECTED


def test_an_event_is_only_whole_at_its_blank_line() -> None:
    events = EventData()
    assert events.feed(b"data: x\n") == []
    assert events.feed(b"\n") == ["x"]
    assert events.feed(b"data: unended") == []
    assert events.finish() == []
    events = EventData()
    assert events.feed(b"data: cr\r") == []  # may be half of a CRLF
    assert events.feed(b"\r") == []
    assert events.finish() == ["cr"]


def response_of(body: bytes) -> httpx2.Response:
    return httpx2.Response(200, content=body, request=REQUEST)


async def read(body: bytes) -> list[dict[str, Any]]:
    return [chunk async for chunk in chunks(response_of(body))]


async def test_chunks_until_done_and_nothing_after() -> None:
    body = b'data: {"n": 1}\n\ndata: {"n": 2}\n\ndata: [DONE]\n\ndata: {"n": 3}\n\n'
    assert await read(body) == [{"n": 1}, {"n": 2}]
    assert await read(b'data: {"n": 1}\n\n') == [{"n": 1}]  # no [DONE]: the stream ends


async def test_the_response_is_read_to_its_end_and_closed() -> None:
    response = response_of(b'data: {"n": 1}\n\ndata: [DONE]\n\n' + b": padding\n" * 1000)
    assert [c async for c in chunks(response)] == [{"n": 1}]
    assert response.is_closed and response.is_stream_consumed


async def test_a_response_read_at_once_lets_the_loop_run_others() -> None:
    """The whole answer is buffered (here: in the response already), so no read waits; the
    other tasks of the loop still run while it is parsed, not only after."""
    count = 40 * YIELD_EVERY
    body = b"".join(b'data: {"n": %d}\n\n' % n for n in range(count)) + b"data: [DONE]\n\n"
    ticks = 0

    async def other_turn() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    other = asyncio.create_task(other_turn())
    await asyncio.sleep(0)
    seen = []  # the other task's ticks when each chunk was handed on
    try:
        async for chunk in chunks(response_of(body)):
            seen.append((chunk["n"], ticks))
    finally:
        other.cancel()
    assert [n for n, _ in seen] == list(range(count))
    first = seen[0][1]
    # It ran again and again during the read: once after every YIELD_EVERY chunks.
    assert seen[-1][1] - first >= count // YIELD_EVERY - 1


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ({"message": "overloaded", "type": "server_error"}, "overloaded"),
        ({"type": "server_error"}, STREAM_ERROR),
        ("boom", STREAM_ERROR),
    ],
)
async def test_an_error_mid_stream_raises_as_the_sdk_does(error: Any, message: str) -> None:
    body = b'data: {"n": 1}\n\ndata: ' + json.dumps({"error": error}).encode() + b"\n\n"
    seen: list[dict[str, Any]] = []

    async def read_into_seen() -> None:
        async for chunk in chunks(response_of(body)):
            seen.append(chunk)

    with pytest.raises(openai.APIError) as caught:
        await read_into_seen()
    assert seen == [{"n": 1}]
    assert caught.value.message == message and caught.value.body == error


@pytest.mark.parametrize("data", [b"{not json", b"[1, 2]", b'"text"'])
async def test_data_that_is_not_a_json_object_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match=r"."):
        await read(b"data: " + data + b"\n\n")


# --- against the fake server -----------------------------------------------------------

REPLIES = [
    text("Hello there, a longer answer in several pieces."),
    calls(("f", {"a": 1}, "id1"), ("f", {"b": [2, 3]}, "id2"), content="thinking"),
    calls(("f", {"q": "x"}, "id1"), ("f", {"q": "y"}, "id2"), index_style="missing"),
    calls(("f", {"q": "x"}, "id1"), ("f", {"q": "y"}, "id2"), index_style="zero"),
    text("no usage", usage=None),
    text("cut short", finish_reason="length"),
]


# Every kind of message a turn sends: the SDK's request transform leaves them as they are.
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "result"},
]


@pytest.mark.parametrize("reply", REPLIES)
async def test_the_same_chunks_as_the_sdk_reads(fake_llm: FakeLLM, reply: Reply) -> None:
    fake_llm.add(reply, reply)
    client = openai.AsyncOpenAI(api_key="k", base_url=fake_llm.base_url, max_retries=0)
    body: dict[str, Any] = {
        "model": "fake-model",
        "messages": MESSAGES,
        "tools": [TOOL],
        "tool_choice": "auto",
        "stream_options": {"include_usage": True},
    }
    try:
        stream = await client.chat.completions.create(stream=True, **body)
        async with stream:
            by_sdk = [chunk.to_dict(mode="json") async for chunk in stream]
        response = await client.post(
            "/chat/completions",
            cast_to=httpx2.Response,
            body={**body, "stream": True},
            options={"headers": {"X-Stainless-Raw-Response": "stream"}},
        )
        ours = [chunk async for chunk in chunks(response)]
    finally:
        await client.close()
    # The fake stamps each reply with the second it was sent: two replies may straddle one.
    assert all(isinstance(chunk["created"], int) for chunk in ours)
    assert untimed(ours) == untimed(by_sdk)
    assert fake_llm.requests[0] == fake_llm.requests[1]


def untimed(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in chunk.items() if key != "created"} for chunk in chunks]


async def test_tool_call_deltas_and_usage_through_the_model(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(
        calls(("f", {"a": "x" * 40}, "id1"), ("f", {"b": 2}, "id2"), content="on it", args_piece=3)
    )
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    response = await make_model().complete([{"role": "user", "content": "x"}], [TOOL], on_text=sink)
    assert response.tool_calls == [
        ToolCall("id1", "f", json.dumps({"a": "x" * 40})),
        ToolCall("id2", "f", '{"b": 2}'),
    ]
    assert response.text == "on it" and "".join(pieces) == "on it"
    assert response.usage == Usage(prompt_tokens=20, completion_tokens=10, requests=1)
    assert response.finish_reason == "tool_calls" and response.model == "fake-model"


async def test_a_stream_cut_off_is_an_unreachable_model(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("a long answer that never ends", drop_after_chunks=3))
    with pytest.raises(LLMError) as caught:
        await make_model().complete([{"role": "user", "content": "x"}], [])
    assert caught.value.kind == "unreachable"


def model_on(handler: Callable[[httpx2.Request], httpx2.Response]) -> OpenAIChatModel:
    model = OpenAIChatModel(LLMConfig(model="m", max_retries=0), api_key="k")
    transport = httpx2.MockTransport(handler)
    model.client = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://model.test/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=transport),
    )
    return model


async def test_an_error_event_mid_stream_fails_the_call() -> None:
    body = (
        b'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\n'
        b'data: {"error": {"message": "the model crashed"}}\n\n'
    )
    model = model_on(lambda request: httpx2.Response(200, content=body))
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    with pytest.raises(LLMError) as caught:
        await model.complete([{"role": "user", "content": "x"}], [], on_text=sink)
    assert pieces == ["Hi"]
    assert caught.value.kind == "unreachable" and "the model crashed" in str(caught.value)


async def test_a_chunk_that_is_not_json_is_an_invalid_response() -> None:
    model = model_on(lambda request: httpx2.Response(200, content=b"data: {oops\n\n"))
    with pytest.raises(LLMError) as caught:
        await model.complete([{"role": "user", "content": "x"}], [])
    assert caught.value.kind == "invalid_response"


async def test_the_request_is_sent_as_built_with_the_key() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=b"data: [DONE]\n\n")

    model = model_on(handler)
    messages = [{"role": "user", "content": [{"type": "text", "text": "x"}]}]
    await model.complete(messages, [TOOL], tool_choice="auto")
    [request] = seen
    assert request.headers["authorization"] == "Bearer k"
    assert json.loads(request.content) == {
        "model": "m",
        "messages": messages,
        "tools": [TOOL],
        "tool_choice": "auto",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
