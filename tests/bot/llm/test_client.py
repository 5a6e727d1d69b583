"""The openai client against the fake server: settings sent, streaming off, usage, errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.llm.client import OpenAIChatModel
from bot.llm.errors import LLMError
from bot.llm.pricing import Price, cost_of, price_for
from bot.llm.response import ToolCall, with_unique_ids
from bot.llm.sdk_errors import classify
from bot.llm.usage import Usage
from tests.fakes.llm_server import FakeLLM, calls, error, text

MakeModel = Callable[..., OpenAIChatModel]
TOOL = {"type": "function", "function": {"name": "f", "description": "F.", "parameters": {}}}


async def test_settings_reach_the_server(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(text("hi"))
    model = make_model(
        model="qwen-plus",
        temperature=0.2,
        max_tokens=300,
        parallel_tool_calls=False,
        extra_body={"enable_thinking": False},
    )
    deltas: list[str] = []

    async def sink(piece: str) -> None:
        deltas.append(piece)

    response = await model.complete([{"role": "user", "content": "x"}], [TOOL], on_text=sink)
    sent = fake_llm.requests[0]
    assert sent["model"] == "qwen-plus"
    assert sent["temperature"] == 0.2
    assert sent["max_tokens"] == 300
    assert sent["parallel_tool_calls"] is False
    assert sent["enable_thinking"] is False
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["tools"] == [TOOL]
    assert response.text == "hi" and "".join(deltas) == "hi"
    assert response.usage == Usage(prompt_tokens=20, completion_tokens=10, requests=1)


async def test_no_tools_means_no_tool_fields(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(text("hi"))
    await make_model().complete([{"role": "user", "content": "x"}], [], tool_choice="none")
    sent = fake_llm.requests[0]
    assert "tools" not in sent and "tool_choice" not in sent and "parallel_tool_calls" not in sent


async def test_without_streaming(fake_llm: FakeLLM, make_model: MakeModel) -> None:
    fake_llm.add(calls(("f", {"a": 1}, "id1"), content="thinking"), text("answer"))
    model = make_model(stream=False)
    deltas: list[str] = []

    async def sink(piece: str) -> None:
        deltas.append(piece)

    first = await model.complete([{"role": "user", "content": "x"}], [TOOL], on_text=sink)
    assert first.tool_calls == [ToolCall("id1", "f", '{"a": 1}')]
    assert first.text == "thinking" and first.finish_reason == "tool_calls"
    second = await model.complete([{"role": "user", "content": "x"}], [TOOL], on_text=sink)
    assert second.text == "answer" and deltas == ["thinking", "answer"]
    assert "stream" not in fake_llm.requests[0] or fake_llm.requests[0]["stream"] is False


async def test_usage_is_estimated_when_the_server_sends_none(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("x" * 40, usage=None))
    response = await make_model(stream_usage=False).complete(
        [{"role": "user", "content": "y" * 400}], []
    )
    assert "stream_options" not in fake_llm.requests[0]
    assert response.usage.estimated
    # 400 characters at 4 a token, plus 4 tokens of per-message overhead; likewise the answer.
    assert response.usage.prompt_tokens == 104 and response.usage.completion_tokens == 14


async def test_the_estimate_learns_from_reported_usage(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    model = make_model()
    fake_llm.add(*[text("ok", usage=(1004, 1)) for _ in range(10)])  # 2 characters a token
    for _ in range(10):
        await model.complete([{"role": "user", "content": "z" * 2000}], [])
    assert model.estimator.chars_per_token == pytest.approx(2.0, abs=0.1)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, "auth"),
        (403, "auth"),
        (404, "not_found"),
        (400, "bad_request"),
        (422, "bad_request"),
        (429, "rate_limited"),
        (500, "server_error"),
    ],
)
async def test_errors_are_classified(
    fake_llm: FakeLLM, make_model: MakeModel, status: int, kind: str
) -> None:
    fake_llm.add(error(status))
    with pytest.raises(LLMError) as caught:
        await make_model(max_retries=0).complete([{"role": "user", "content": "x"}], [])
    assert caught.value.kind == kind
    assert str(status) in str(caught.value)
    assert "Error" not in caught.value.user_message
    assert caught.value.user_message.endswith(".")


def test_unknown_exceptions_read_as_unreachable() -> None:
    err = classify(ConnectionResetError("peer reset"))
    assert err.kind == "unreachable"
    assert err.user_message.startswith("The model service is not answering")


def test_ids_are_made_unique() -> None:
    fixed = with_unique_ids(
        [
            ToolCall("", "a", "{}"),
            ToolCall("x", "b", "{}"),
            ToolCall("x", "c", "{}"),
            ToolCall("p_2", "d", "{}"),
        ],
        "p",
    )
    ids = [c.id for c in fixed]
    assert ids[1] == "x" and ids[3] == "p_2"
    assert len(set(ids)) == 4 and all(ids)


def test_prices() -> None:
    prices = {"gpt-4o": Price(input=2.5, output=10), "gpt-4o-mini": Price(input=0.15, output=0.6)}
    assert price_for("gpt-4o-mini-2024-07-18", prices) == prices["gpt-4o-mini"]
    assert price_for("gpt-4o", prices) == prices["gpt-4o"]
    assert price_for("qwen-max", prices) is None
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000, cached_tokens=400_000)
    cached = Price(input=1.0, output=2.0, cached_input=0.5)
    assert cost_of(usage, cached) == pytest.approx(0.6 + 0.2 + 2.0)
    assert cost_of(usage, Price(input=1.0, output=2.0)) == pytest.approx(3.0)
    assert cost_of(usage, None) is None
    assert (Usage(1, 2, requests=1) + Usage(3, 4, requests=1, estimated=True)) == Usage(
        4, 6, requests=2, estimated=True
    )
