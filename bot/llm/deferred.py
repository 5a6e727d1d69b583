"""The configured model, with the openai SDK loaded only when a call needs it.

A process that never calls the model (the ingress, ``slack-agent tools``) so starts without
the SDK: half a second of CPU and about 45 MB less. A worker loads it while it starts
(:meth:`DeferredChatModel.load`), before its first turn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.llm.model import Message, TextCallback
from bot.llm.response import ModelResponse
from bot.llm.tokens import TokenEstimator

if TYPE_CHECKING:
    from bot.config.schema import LLMConfig
    from bot.llm.client import OpenAIChatModel


class DeferredChatModel:
    """An :class:`OpenAIChatModel` built at the first call; its name and estimator are
    known before."""

    def __init__(self, config: LLMConfig, *, api_key: str | None, base_url: str | None) -> None:
        self.config = config
        self.model_name = config.model
        self.estimator = TokenEstimator()  # the built model's own: what it learns is kept
        self._api_key = api_key
        self._base_url = base_url
        self._model: OpenAIChatModel | None = None

    def load(self) -> OpenAIChatModel:
        if self._model is None:
            from bot.llm.client import OpenAIChatModel

            self._model = OpenAIChatModel(
                self.config,
                api_key=self._api_key,
                base_url=self._base_url,
                estimator=self.estimator,
            )
        return self._model

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        *,
        tool_choice: str | None = None,
        on_text: TextCallback | None = None,
        max_tokens: int | None = None,
    ) -> ModelResponse:
        return await self.load().complete(
            messages, tools, tool_choice=tool_choice, on_text=on_text, max_tokens=max_tokens
        )

    async def aclose(self) -> None:
        if self._model is not None:
            await self._model.aclose()
