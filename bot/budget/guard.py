"""The chat model within a person's spending limits: before each call its estimate is
reserved against every limit that applies (a reached limit raises ``OverBudget`` and the
model is not called), after it the reservation is settled with the real usage; a failed call
releases it, a stopped one counts what streamed before the stop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from bot.budget.estimate import CallEstimator, Estimate
from bot.llm.model import TextCallback
from bot.llm.response import ModelResponse
from bot.llm.usage import Usage


class CappableChatModel(Protocol):
    """A ChatModel whose answer can be capped per call (OpenAIChatModel; MCP sampling)."""

    model_name: str

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        *,
        tool_choice: str | None = None,
        on_text: TextCallback | None = None,
        max_tokens: int | None = None,
    ) -> ModelResponse: ...


class Hold(Protocol):
    """One call's reservation. Neither raises: a hold never settled is counted at its
    estimate once its deadline passes."""

    async def settle(self, usage: Usage) -> None: ...

    async def release(self) -> None: ...


Reserve = Callable[[Estimate], Awaitable[Hold]]  # raises OverBudget when a limit is reached


class BudgetedModel:
    def __init__(self, model: CappableChatModel, reserve: Reserve, estimate: CallEstimator) -> None:
        self.model = model
        self.model_name = model.model_name
        self.reserve = reserve
        self.estimate = estimate

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        *,
        tool_choice: str | None = None,
        on_text: TextCallback | None = None,
        max_tokens: int | None = None,
    ) -> ModelResponse:
        estimate = self.estimate(messages, tools, max_tokens)
        hold = await self.reserve(estimate)
        streamed = 0

        async def counted(text: str) -> None:
            nonlocal streamed
            streamed += len(text)
            if on_text is not None:
                await on_text(text)

        try:
            response = await self.model.complete(
                messages, tools, tool_choice=tool_choice, on_text=counted, max_tokens=max_tokens
            )
        except asyncio.CancelledError:
            # Stopped mid-answer: the prompt and what streamed were spent all the same.
            await asyncio.shield(hold.settle(self.estimate.cut_short(estimate, streamed).usage))
            raise
        except BaseException:
            await hold.release()
            raise
        await hold.settle(response.usage)
        return response
