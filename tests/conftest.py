from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bot.config.schema import LLMConfig
from bot.llm.client import OpenAIChatModel
from tests.fakes.llm_server import FakeLLM


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeLLM]:
    server = FakeLLM()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def make_model(fake_llm: FakeLLM) -> AsyncIterator[Callable[..., OpenAIChatModel]]:
    """The real openai client pointed at the fake server."""
    made: list[OpenAIChatModel] = []

    def make(**settings: Any) -> OpenAIChatModel:
        settings.setdefault("model", "fake-model")
        settings.setdefault("max_retries", 2)
        settings.setdefault("timeout_s", 10)
        model = OpenAIChatModel(
            LLMConfig(**settings), api_key="test-key", base_url=fake_llm.base_url
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()
