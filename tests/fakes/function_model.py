"""An in-process model whose answers come from a Python function (no network)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bot.llm.model import TextCallback
from bot.llm.response import ModelResponse
from bot.llm.usage import Usage

Respond = Callable[[Sequence[dict[str, Any]], Sequence[dict[str, Any]]], Awaitable[ModelResponse]]


class FunctionModel:
    model_name = "function-model"

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.calls: list[list[dict[str, Any]]] = []

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        *,
        tool_choice: str | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        self.calls.append(list(messages))
        response = await self.respond(messages, tools)
        if response.text and on_text is not None:
            await on_text(response.text)
        if not response.usage.requests:
            response = ModelResponse(
                response.text, response.tool_calls, Usage(10, 5, requests=1), "stop", "fn"
            )
        return response


def last_user_text(messages: Sequence[dict[str, Any]]) -> str:
    return next(str(m["content"]) for m in reversed(messages) if m["role"] == "user")
