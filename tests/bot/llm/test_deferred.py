"""The configured model with its SDK loaded at the first call: the same answers, streamed
text, caps and usage as the model it builds, whose estimator it knew before."""

from __future__ import annotations

import pytest

from bot.config.schema import LLMConfig
from bot.llm.deferred import DeferredChatModel
from bot.llm.usage import Usage
from tests.fakes.llm_server import FakeLLM, text


def deferred(fake_llm: FakeLLM, **settings: object) -> DeferredChatModel:
    config = LLMConfig.model_validate({"model": "fake-model", "max_retries": 0, **settings})
    return DeferredChatModel(config, api_key="test-key", base_url=fake_llm.base_url)


async def test_the_first_call_builds_the_model_and_answers(fake_llm: FakeLLM) -> None:
    model = deferred(fake_llm)
    assert model.model_name == "fake-model"
    fake_llm.add(text("Hello there.", usage=(20, 10)), text("Capped.", usage=(5, 2)))
    streamed: list[str] = []

    async def on_text(piece: str) -> None:
        streamed.append(piece)

    try:
        answer = await model.complete([{"role": "user", "content": "hi"}], [], on_text=on_text)
        assert answer.text == "Hello there." and "".join(streamed) == "Hello there."
        assert answer.usage == Usage(prompt_tokens=20, completion_tokens=10, requests=1)
        capped = await model.complete([{"role": "user", "content": "hi"}], [], max_tokens=7)
        assert capped.text == "Capped."
        assert [r["max_tokens"] for r in fake_llm.requests[1:]] == [7]
        assert model.load() is model.load()  # built once
    finally:
        await model.aclose()
    assert model.load().client.is_closed()


async def test_what_the_built_model_learns_is_the_estimator_known_before(
    fake_llm: FakeLLM,
) -> None:
    model = deferred(fake_llm)
    estimator = model.estimator  # what the budgets were given before any call
    fake_llm.add(*[text("ok", usage=(1004, 1)) for _ in range(10)])  # 2 characters a token
    try:
        for _ in range(10):
            await model.complete([{"role": "user", "content": "z" * 2000}], [])
    finally:
        await model.aclose()
    assert estimator.chars_per_token == pytest.approx(2.0, abs=0.1)
